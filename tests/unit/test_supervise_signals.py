"""A queued supervisor stops waiting once: ``stop`` signals the process group and then the
supervisor itself, so two SIGTERMs arrive back to back. The second, raised again while the
first's exit record was being written, ended the supervisor with nothing written, and
``status`` said "its supervisor was killed" instead of "stopped by SIGTERM while queued"
(a flaky fresh-clone CI failure of tests/security/test_sweep_queue.py)."""

from __future__ import annotations

import signal

import pytest
from ftspec.reconciler.local import supervise


def test_the_first_stop_signal_ignores_the_ones_after_it() -> None:
    saved = {sig: signal.getsignal(sig) for sig in supervise._STOP_SIGNALS}
    try:
        with pytest.raises(supervise._Stopped) as stopped:
            supervise._stop_waiting(signal.SIGTERM, None)
        assert stopped.value.signum == signal.SIGTERM
        assert [signal.getsignal(s) for s in supervise._STOP_SIGNALS] == \
            [signal.SIG_IGN] * len(supervise._STOP_SIGNALS)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
