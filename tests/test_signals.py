"""The engine's notices (signals.py): what follows a write hears of it once, unless the writer's
own thread muted it for a batch — another thread's writes are heard meanwhile."""

from __future__ import annotations

import threading

from memlane.models import Scope
from memlane.signals import Signals


def test_a_mute_is_per_thread_and_nests_and_unsubscribe_stops_delivery() -> None:
    signals = Signals()
    heard: list[tuple[str, str]] = []
    stop = signals.subscribe("memory.changed", lambda scope: heard.append((threading.current_thread().name, scope.user_id)))
    lin = Scope.of("lin")
    with signals.mute("memory.changed"):
        with signals.mute("memory.changed", "rows.written"):
            signals.send("memory.changed", lin)
        signals.send("memory.changed", lin)  # the outer mute still holds
        other = threading.Thread(target=signals.send, args=("memory.changed", Scope.of("mei")), name="other")
        other.start()
        other.join()
    assert heard == [("other", "mei")]
    signals.send("memory.changed", lin)
    assert heard[-1] == (threading.current_thread().name, "lin") and not signals.muted("memory.changed")
    stop()
    stop()  # twice is harmless
    signals.send("memory.changed", lin)
    assert len(heard) == 2
