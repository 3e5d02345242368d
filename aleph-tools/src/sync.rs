//! Locks that outlive a panic: a thread that panicked while holding one leaves data that is
//! still consistent here (every critical section is a plain read or a single assignment), so
//! the lock is taken anyway instead of spreading the panic to every later caller.

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
