"""What a training task of a parameter-server cluster says, and does, while a ps task is lost.

TF 2.15's chief and workers wait for a lost ps without a word of their own:
their session fails, TensorFlow recreates it, and session creation blocks until
the ps serves again (then training goes on; the chief refills the ps from its
newest checkpoint). That stays so here. `ParameterServerWatch` adds what TF 2.15
left unsaid: once the ps tasks cannot be reached for two probes in a row it
names them, says that training waits, and names the checkpoint a restarted
cluster resumes from; and after `RunConfig.session_creation_timeout_secs`
(TF 2.15's bound on waiting for a session, 2 hours by default) of waiting it
ends the task with that message and exit status 1 instead of waiting on. The
main thread is then blocked inside TensorFlow's session creation, which no
Python exception reaches, so the watch ends the process itself; no checkpoint
is being written while the ps is unreachable (the variables are on it), and
TensorFlow writes checkpoints whole or not at all. Time counts as lost only
while no training step finishes, so a probe that fails on its own route never
ends a task that still trains.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence

import tensorflow as tf

PROBE_SECS = 5.0


def reachable(address: str, timeout: float = 2.0) -> bool:
    """Whether a TCP connection to `address` ("host:port", "[v6]:port") opens: the ps's server accepts one."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


class ParameterServerWatch(tf.compat.v1.train.SessionRunHook):
    """Probes `addresses` every `probe_secs` from the first session on; see the module docstring."""

    def __init__(
        self,
        addresses: Sequence[str],
        model_dir: str,
        give_up_secs: float,
        probe_secs: float = PROBE_SECS,
        end_process: Callable[[int], None] = os._exit,
    ) -> None:
        self._addresses = list(addresses)
        self._model_dir = model_dir
        self._give_up_secs = give_up_secs
        self._probe_secs = probe_secs
        self._end_process = end_process
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_step = time.monotonic()

    def after_create_session(self, session, coord) -> None:
        if self._thread is None:  # the first session: the ps tasks have served once
            self._thread = threading.Thread(target=self._watch, name="ps-watch", daemon=True)
            self._thread.start()

    def after_run(self, run_context, run_values) -> None:
        self._last_step = time.monotonic()  # a step ran: TensorFlow reaches the ps, whatever a probe says

    def end(self, session) -> None:
        self.stop()

    def stop(self) -> None:
        """Ends the watch; `end` calls it when training ends, the caller when training raised."""
        self._stopped.set()

    def _message(self, lost: list[str], waited: float, ending: bool) -> str:
        try:
            checkpoint = tf.train.latest_checkpoint(self._model_dir)  # read only: the chief's state file
            resumes = f"resumes from {checkpoint}" if checkpoint else "starts from step 0 (no checkpoint yet)"
        except (tf.errors.OpError, OSError):  # the folder unreadable now: the message still goes out
            resumes = f"resumes from the newest checkpoint in {self._model_dir}"
        unreachable = f"ps task(s) at {', '.join(lost)} cannot be reached for {waited:.0f} s"
        limit = f"RunConfig.session_creation_timeout_secs, {self._give_up_secs:.0f} s"
        if ending:
            return (
                f"{unreachable}, longer than {limit}: this task ends now. Start every task again with the same "
                f"command: training {resumes}"
            )
        return (
            f"{unreachable}. Training waits for them, as TF 2.15's did, and goes on by itself once they serve "
            f"again; otherwise stop every task and start them all again with the same command: training "
            f"{resumes}. This task ends if they cannot be reached for {limit}"
        )

    def _watch(self) -> None:
        lost_since: float | None = None
        probes_lost, warned = 0, False
        while not self._stopped.wait(self._probe_secs):
            lost = [address for address in self._addresses if not reachable(address)]
            if lost_since is not None and self._last_step > lost_since:
                lost = []  # steps still run: the probe's route fails, TensorFlow's does not
            if not lost:
                if warned:
                    tf.compat.v1.logging.info("The ps tasks serve again: training goes on")
                lost_since, probes_lost, warned = None, 0, False
                continue
            lost_since = time.monotonic() if lost_since is None else lost_since
            probes_lost += 1
            waited = time.monotonic() - lost_since
            if self._stopped.is_set():
                return  # training ended while this probe ran
            if waited >= self._give_up_secs:
                tf.compat.v1.logging.error("%s", self._message(lost, waited, ending=True))
                sys.stderr.flush()
                self._end_process(1)
                return
            if probes_lost >= 2 and not warned:
                tf.compat.v1.logging.warning("%s", self._message(lost, waited, ending=False))
                warned = True
