"""The worker's start-up hooks (kourier/celery.py)."""

import gc

import pytest
from celery.signals import worker_process_init, worker_ready

from kourier.celery import app


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()  # the test process goes on collecting what it made


@pytest.mark.parametrize("signal", [worker_ready, worker_process_init], ids=["worker", "prefork child"])
def test_a_ready_worker_puts_what_its_start_made_out_of_the_garbage_collectors_reach(unfrozen, signal):
    made_at_start: list[object] = []  # a container: the collector tracks it

    signal.send(sender=app)

    assert gc.get_freeze_count() > 0
    assert not any(obj is made_at_start for obj in gc.get_objects())  # frozen objects are not listed
