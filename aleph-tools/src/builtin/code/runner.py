# Runs one code-mode script in Python: the same protocol as runner.js. The first line of
# standard input holds {code, tools, valueLimit}; each line on standard output is one JSON
# message (call, log, done, error), each after a newline of its own; the host answers calls
# on standard input.
import ast
import asyncio
import json
import os
import sys
import threading
import traceback

_protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8", errors="replace")
_lock = threading.Lock()


def _send(message):
    line = json.dumps(message, ensure_ascii=False, allow_nan=False)
    with _lock:
        _protocol.write("\n" + line + "\n")
        _protocol.flush()


class _Output:
    """What the script prints, sent as log messages."""

    encoding = "utf-8"

    def write(self, text):
        if text:
            _send({"t": "log", "text": str(text)})
        return len(text)

    def flush(self):
        pass

    def isatty(self):
        return False


class ToolError(Exception):
    """A tool call that failed; the message says why."""

    def __init__(self, tool, message):
        super().__init__(message)
        self.tool = tool


class _Tools:
    """Each tool open to code, as an async method: `await tools.name(arg=value)`."""

    # The runner's own attributes are name-mangled (`_Tools__…`), so no tool name hides them.
    def __init__(self, names, loop):
        object.__setattr__(self, "_Tools__names", tuple(names))
        object.__setattr__(self, "_Tools__loop", loop)
        object.__setattr__(self, "_Tools__pending", {})
        object.__setattr__(self, "_Tools__next", 1)

    def __dir__(self):
        return list(self.__names)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda args=None, **named: self.__call(name, args, named)

    def __getitem__(self, name):
        return self.__getattr__(name)

    def __setattr__(self, name, value):
        raise AttributeError("tools cannot be changed")

    async def __call(self, name, args, named):
        if args is None:
            args = named
        elif named or not isinstance(args, dict):
            raise TypeError(
                f"tools.{name} takes named arguments (tools.{name}(city='Paris')) or one dict"
            )
        call_id = self.__next
        object.__setattr__(self, "_Tools__next", call_id + 1)
        future = self.__loop.create_future()
        self.__pending[call_id] = (name, future)
        _send({"t": "call", "id": call_id, "tool": name, "args": args})
        return await future

    def __answer(self, message):
        entry = self.__pending.pop(message.get("id"), None)
        if entry is None:
            return
        name, future = entry
        if future.done():
            return
        if message.get("ok"):
            future.set_result(message.get("value"))
        else:
            future.set_exception(ToolError(name, message.get("error", "the call failed")))


def _line_of(error):
    if isinstance(error, SyntaxError) and error.filename == "script.py":
        return error.lineno
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename == "script.py":
            line = frame.lineno
    return line


def _fail(error):
    message = f"{type(error).__name__}: {error}"
    _send({"t": "error", "message": message, "line": _line_of(error)})


def _compile(code):
    """The script as the body of an async function, so `await` and `return` work at its top."""
    tree = ast.parse(code, filename="script.py")
    arguments = ast.arguments(
        posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]
    )
    function = ast.AsyncFunctionDef(
        name="__script__", args=arguments, body=tree.body or [ast.Pass()], decorator_list=[], returns=None
    )
    if sys.version_info >= (3, 12):
        function.type_params = []
    module = ast.Module(body=[function], type_ignores=[])
    ast.fix_missing_locations(module)
    return compile(module, "script.py", "exec")


def _read(loop, tools):
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        loop.call_soon_threadsafe(tools._Tools__answer, message)


async def _main(request):
    loop = asyncio.get_running_loop()
    tools = _Tools(request["tools"], loop)
    threading.Thread(target=_read, args=(loop, tools), daemon=True).start()
    namespace = {"tools": tools, "ToolError": ToolError, "asyncio": asyncio, "__name__": "__script__"}
    try:
        exec(_compile(request["code"]), namespace)
        value = await namespace["__script__"]()
    except BaseException as error:  # the script's own failure, reported with its line
        _fail(error)
        return
    if value is None:
        _send({"t": "done"})
        return
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        _fail(TypeError(f"the returned value cannot be turned into JSON: {error}"))
        return
    limit = request.get("valueLimit", 1 << 20)
    if len(text) > limit:
        _fail(ValueError(f"the returned value is {len(text)} characters of JSON, more than the {limit} allowed; return a summary"))
        return
    with _lock:
        _protocol.write('\n{"t":"done","value":' + text + "}\n")
        _protocol.flush()


def _start():
    request = json.loads(sys.stdin.readline())
    sys.stdout = _Output()
    sys.stderr = _Output()
    asyncio.run(_main(request))
    _protocol.flush()
    os._exit(0)


_start()
