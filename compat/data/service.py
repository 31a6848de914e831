"""The tf.data service's servers, started from the command line: TensorFlow's own, configured here.

    python -m compat.data.service dispatcher --port=5050 [--work_dir=DIR]
    python -m compat.data.service worker --dispatcher_address=127.0.0.1:5050 [--port=0]

A trainer started with `--tf_data_service=grpc://127.0.0.1:5050` then has the
service's workers read, decode and compute features for its training split
(`compat.data.examples`); batching, augmentation and prefetch stay on the
trainer. Each server prints one line, `<role> listening on HOST:PORT`, once it
serves, so a script that passed `--port=0` can read the port it got.

Addresses: the servers advertise `--host` (127.0.0.1 unless told otherwise), so
a dispatcher on 127.0.0.1 hands trainers worker addresses on this machine only.
TensorFlow's servers have no bind-address setting: gRPC listens on every
interface of the machine, so on a shared network keep the ports behind a
firewall. `--work_dir` makes the dispatcher fault tolerant (it journals its
state there and a restarted dispatcher resumes its jobs).

Workers must be able to open the files the trainer lists (same paths, e.g. a
shared file system): the service sends them the pipeline, not the data.
"""

from __future__ import annotations

import os
import socket
import sys

from absl import app, flags

_ROLES = ("dispatcher", "worker")


def _define_flags() -> None:
    # Defined only when this module is the program: train.py's flags stay its own.
    flags.DEFINE_integer("port", 0, "Port to serve on; 0 picks a free one (printed).", lower_bound=0, upper_bound=65535)
    flags.DEFINE_string("host", "127.0.0.1", "Address this server gives to others (trainers, the dispatcher).")
    flags.DEFINE_string("dispatcher_address", None, "worker: the dispatcher's HOST:PORT.")
    flags.DEFINE_string("work_dir", None, "dispatcher: a folder to journal its state in, for fault tolerance.")
    flags.DEFINE_integer(
        "worker_timeout_ms",
        10_000,
        "dispatcher: a worker silent this long is taken for dead and its work moves on.",
        lower_bound=100,
    )


def start_dispatcher(port: int = 0, work_dir: str | None = None, worker_timeout_ms: int = 10_000):
    """A started `tf.data.experimental.service.DispatchServer`."""
    import tensorflow as tf

    service = tf.data.experimental.service
    return service.DispatchServer(
        service.DispatcherConfig(
            port=port, work_dir=work_dir, fault_tolerant_mode=bool(work_dir), worker_timeout_ms=worker_timeout_ms
        )
    )


def start_worker(dispatcher_address: str, port: int = 0, host: str = "127.0.0.1"):
    """A started `tf.data.experimental.service.WorkerServer` that registers with `dispatcher_address`."""
    import tensorflow as tf

    service = tf.data.experimental.service
    return service.WorkerServer(
        service.WorkerConfig(
            dispatcher_address=dispatcher_address.removeprefix("grpc://"), worker_address=f"{host}:%port%", port=port
        )
    )


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def main(argv: list[str]) -> None:
    if len(argv) != 2 or argv[1] not in _ROLES:
        raise app.UsageError(f"usage: python -m compat.data.service {'|'.join(_ROLES)} [--flags]")
    flag_values = flags.FLAGS
    role = argv[1]
    if role == "dispatcher":
        server = start_dispatcher(flag_values.port, flag_values.work_dir, flag_values.worker_timeout_ms)
        port = int(server.target.rsplit(":", 1)[1])
    else:
        if not flag_values.dispatcher_address:
            raise app.UsageError("worker needs --dispatcher_address=HOST:PORT (the dispatcher's)")
        # WorkerServer has no public way to tell the port it got, so a free one is chosen here.
        port = flag_values.port or _free_port(flag_values.host)
        server = start_worker(flag_values.dispatcher_address, port, flag_values.host)
    print(f"{role} listening on {flag_values.host}:{port}", flush=True)
    # Said at every start: the one exception to this project's servers binding 127.0.0.1 by default.
    print(
        f"{role}: TensorFlow's tf.data service servers accept connections on every network interface (they have "
        f"no bind-address setting): keep port {port} behind a firewall on a shared network",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.join()
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    _define_flags()
    app.run(main)
