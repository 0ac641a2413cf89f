"""The release's tools inside the jail (``list_files``, ``return_txt``, ... and their short names).

One script, linked under each tool's name on the jail's ``PATH``. It asks hippocamp's tool broker
outside the jail (over the Unix socket ``/hippocamp/api/broker.sock``) with its working directory,
name and arguments, writes the files the answer carries (``return_img``/``return_ori`` outputs, under
``/hippocamp/output`` or ``/tmp``: the jail's own permissions decide), prints the answer and exits with
its status. It imports only ``os``, ``sys`` and ``_socket`` (a tool call starts a python3 each time).

The protocol, bytes both ways. Request: the working directory, the tool's name and its arguments,
joined by NUL bytes. Reply: ``EXIT NFILES\\n``, then for each file ``PATHLEN DATALEN\\n`` with the path
and the data, then the standard output to the end. This file is hippocamp's own code, copied into
the jail and never imported by hippocamp.
"""

import _socket
import os
import sys

SOCKET = "/hippocamp/api/broker.sock"
#: the most a reply may hold (the broker caps its answers below this)
MAX_REPLY = 256 * 1024 * 1024


def _line(data, pos):
    end = data.index(b"\n", pos)
    return [int(x) for x in data[pos:end].split()], end + 1


def main():
    name = os.path.basename(sys.argv[0])
    request = b"\0".join(os.fsencode(a) for a in [os.getcwd(), name, *sys.argv[1:]])
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.connect(SOCKET)
        conn.sendall(request)
        conn.shutdown(_socket.SHUT_WR)
        chunks, size = [], 0
        while True:
            data = conn.recv(1 << 20)
            if not data:
                break
            size += len(data)
            if size > MAX_REPLY:
                raise OSError("the reply is too large")
            chunks.append(data)
        reply = b"".join(chunks)
        (status, count), pos = _line(reply, 0)
        files = []
        for _ in range(count):
            (plen, dlen), pos = _line(reply, pos)
            files.append((reply[pos : pos + plen], reply[pos + plen : pos + plen + dlen]))
            pos += plen + dlen
    except (OSError, ValueError) as exc:
        sys.stdout.write(f'{{"success":false,"error":"{name}: the tool service did not answer: {exc}"}}\n')
        return 1
    finally:
        conn.close()
    for path, data in files:
        try:
            folder = os.path.dirname(path)
            if folder:
                os.makedirs(folder, exist_ok=True)
            with open(path, "wb") as out:
                out.write(data)
        except OSError as exc:
            sys.stderr.write(f"{name}: cannot write {os.fsdecode(path)}: {exc.strerror}\n")
    out = reply[pos:]
    sys.stdout.flush()
    os.write(1, out if out.endswith(b"\n") or not out else out + b"\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
