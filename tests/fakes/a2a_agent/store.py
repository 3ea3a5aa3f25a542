"""The agent's task store: the SDK's in-memory store, observed by the test and able to "crash"."""

from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import Task

from tests.fakes.a2a_agent.records import Recorder, TaskView


class RecordingTaskStore(InMemoryTaskStore):
    """Mirrors every saved task into the recorder so tests can read and wait on task states."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self._recorder = recorder
        self._forgotten: set[str] = set()

    async def save(self, task: Task, context: ServerCallContext) -> None:
        if task.id in self._forgotten:
            # Events still in flight when the agent "crashed" die with it; nothing may bring the task back.
            return
        await super().save(task, context)
        self._recorder.update_task(TaskView.from_proto(task))

    async def forget(self, task_id: str, context: ServerCallContext) -> None:
        """Lose the task as a crashed in-memory agent would: GetTask now answers TaskNotFound."""
        self._forgotten.add(task_id)
        await self.delete(task_id, context)
        self._recorder.forget_task(task_id)
