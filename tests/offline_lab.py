"""Run `make lab WHEELS=...` in a copy of the repository and check what it serves (issue 36).

Run by tests/test_offline_lab.py as ``python offline_lab.py SETTINGS.json``, inside a network
namespace of its own where the machine allows one (``unshare -n``: only a loopback device,
which this script brings up), so nothing it starts can reach another host. It starts
``make lab`` in its own process group, waits for the server, asks it for notebook 01 (the page
the printed URL opens, and the file through the contents API), starts a kernel in notebook
01's folder and has it import kvlib, stops the server, and prints what it found as one JSON
line. Standard library only, and tornado (JupyterLab's server library) for the kernel's
websocket. SETTINGS: ``copy`` (the repository copy), ``make`` (the make arguments), ``env``,
``port``, ``token``, ``notebook``, ``log``, ``timeout`` (seconds for the whole run: installing,
serving and the checks), ``loopback`` (bring ``lo`` up). Each request may take up to a minute and
the kernel two, within that budget: on 2 cores shared with other work every step slows down.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request


def loopback_up() -> None:
    """Bring ``lo`` up in a new network namespace (ip link set lo up, without iproute2)."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, siocgifflags, req))[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def reaches_outside() -> bool:
    """Whether a connection to a public address gets anywhere (DNS is not needed for this)."""
    try:
        socket.create_connection(("1.1.1.1", 443), timeout=3).close()
    except OSError:
        return False
    return True


def run_in_kernel(url: str, code: str, timeout: float = 120) -> str:
    """What ``code`` prints in the kernel behind ``url`` (the channels websocket Lab uses).

    The kernel answers on two channels that reach the websocket independently: the reply on
    shell, the printed text on IOPub. ``execute_reply`` can arrive before the last ``stream``
    message (seen: 5 of 10 runs on an idle machine), so what was printed is complete only when
    IOPub says the kernel went ``idle`` for this request; the kernel sends that after all of the
    request's output, on the same channel. Both must be seen within ``timeout`` seconds.
    """
    import asyncio
    import uuid

    from tornado.websocket import websocket_connect  # JupyterLab's own server library

    printed: list[str] = []
    seen: set[str] = set()  # "reply" (shell) and "idle" (IOPub), for this request

    async def talk() -> str:
        ws = await websocket_connect(url)
        msg_id = uuid.uuid4().hex
        await ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                       "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
        try:
            while seen != {"reply", "idle"}:
                raw = await ws.read_message()
                if raw is None:
                    raise ConnectionError("the kernel's websocket closed")
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = msg["msg_type"]
                if kind == "stream":
                    printed.append(msg["content"]["text"])
                elif kind == "error":
                    printed.append("\n".join(msg["content"]["traceback"]))
                elif kind == "execute_reply":
                    seen.add("reply")
                elif kind == "status" and msg["content"]["execution_state"] == "idle":
                    seen.add("idle")
        finally:
            ws.close()
        return "".join(printed)

    try:
        return asyncio.run(asyncio.wait_for(talk(), timeout))
    except TimeoutError:  # asyncio.TimeoutError is TimeoutError from Python 3.11
        got = "".join(printed)
        raise TimeoutError(f"no execute_reply and IOPub idle within {timeout:.0f} s "
                           f"(seen: {sorted(seen)}; printed so far: {got!r})") from None


def main(settings_path: str) -> int:
    cfg = json.loads(open(settings_path).read())
    if cfg["loopback"]:
        loopback_up()
    base = f"http://127.0.0.1:{cfg['port']}"
    auth = {"Authorization": f"token {cfg['token']}"}
    found: dict = {"network": reaches_outside()}

    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy to 127.0.0.1

    t0 = time.monotonic()
    deadline = t0 + cfg["timeout"]

    def left(cap: float) -> float:
        """Seconds a step may take: at most ``cap``, and never past the run's deadline."""
        return max(1.0, min(cap, deadline - time.monotonic()))

    def get(path: str, method: str = "GET", headers: dict | None = None, body: dict | None = None,
            cap: float = 60):
        req = urllib.request.Request(base + path, method=method, headers=headers or auth,
                                     data=None if body is None else json.dumps(body).encode())
        with direct.open(req, timeout=left(cap)) as r:
            return r.status, r.read().decode()

    with open(cfg["log"], "wb") as log:
        proc = subprocess.Popen(["make", *cfg["make"]], cwd=cfg["copy"], env=cfg["env"],
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        while True:  # installing, then starting the server
            if proc.poll() is not None:
                found["exited"] = proc.returncode
                return print(json.dumps(found)) or 0
            if time.monotonic() > deadline:
                found["timeout"] = True
                return print(json.dumps(found)) or 0
            try:
                get("/api/status", cap=10)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        found["serving_after_s"] = round(time.monotonic() - t0, 1)
        nb = cfg["notebook"]
        found["page"] = get(f"/lab/tree/{nb}?token={cfg['token']}", headers={})
        status, body = get(f"/api/contents/{nb}?content=1")
        found["contents"] = [status, json.loads(body)]
        status, body = get("/api/kernels", method="POST", body={"path": "notebooks"})
        kernel = json.loads(body)
        found["kernel_output"] = run_in_kernel(
            f"ws://127.0.0.1:{cfg['port']}/api/kernels/{kernel['id']}/channels?token={cfg['token']}",
            "import os, sys, kvlib; print(os.getcwd()); print(sys.prefix); print(kvlib.__file__)",
            timeout=left(120))
        found["kernel_stopped"] = get(f"/api/kernels/{kernel['id']}", method="DELETE")[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # make and the server it started
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
    found["total_s"] = round(time.monotonic() - t0, 1)
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
