//! Locks that outlive a panic. A panic while one of this crate's locks is held (in a tool, a
//! layer, a handler) must cost only its own call: the lock is taken anyway rather than
//! spreading the panic to every later caller. What these locks guard is replaced whole or
//! changed by single inserts and removals, never left half-written across a call out.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, whether or not a panic poisoned it.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read-locks `lock`, whether or not a panic poisoned it.
#[allow(dead_code, reason = "used by some feature sets only")]
pub(crate) fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write-locks `lock`, whether or not a panic poisoned it.
#[allow(dead_code, reason = "used by some feature sets only")]
pub(crate) fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
