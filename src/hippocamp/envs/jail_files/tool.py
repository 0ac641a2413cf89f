"""The release's tools inside the jail (``list_files``, ``return_txt``, ... and their short names).

One script, linked under each tool's name on the jail's ``PATH``. It asks hippocamp's tool broker
outside the jail (over the Unix socket ``/hippocamp/api/broker.sock``) with its name, arguments and
working directory, writes the files the answer carries (``return_img``/``return_ori`` outputs, under
``/hippocamp/output`` or ``/tmp``: the jail's own permissions decide), prints the JSON answer and exits
with its status. Standard library only: it runs on the jail's system python3. This file is
hippocamp's own code, copied into the jail and never imported by hippocamp.
"""

import base64
import json
import os
import socket
import sys

SOCKET = "/hippocamp/api/broker.sock"
#: the most a reply may hold (the broker caps its answers below this)
MAX_REPLY = 256 * 1024 * 1024


def main() -> int:
    name = os.path.basename(sys.argv[0])
    request = {"argv": [name, *sys.argv[1:]], "cwd": os.getcwd()}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(SOCKET)
            conn.sendall(json.dumps(request).encode("utf-8") + b"\n")
            conn.shutdown(socket.SHUT_WR)
            chunks, size = [], 0
            while True:
                data = conn.recv(1 << 20)
                if not data:
                    break
                size += len(data)
                if size > MAX_REPLY:
                    raise OSError("the reply is too large")
                chunks.append(data)
        reply = json.loads(b"".join(chunks))
    except (OSError, ValueError) as exc:
        print(json.dumps({"success": False, "error": f"{name}: the tool service did not answer: {exc}"}))
        return 1
    for path, blob in reply.get("files", []):
        try:
            folder = os.path.dirname(path)
            if folder:
                os.makedirs(folder, exist_ok=True)
            with open(path, "wb") as out:
                out.write(base64.b64decode(blob))
        except OSError as exc:
            print(f"{name}: cannot write {path}: {exc.strerror}", file=sys.stderr)
    sys.stdout.write(reply.get("stdout", ""))
    if reply.get("stdout") and not reply["stdout"].endswith("\n"):
        sys.stdout.write("\n")
    return int(reply.get("exit", 1))


if __name__ == "__main__":
    sys.exit(main())
