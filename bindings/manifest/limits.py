"""What a manifest's values may be: the lengths, counts and shapes the readers hold them to (the
models' column sizes follow the same numbers)."""

from __future__ import annotations

import re
from datetime import timedelta

NAME_MAX_LENGTH = 63
ENV_NAME_MAX_LENGTH = 255
URL_MAX_LENGTH = 500
EMOJI_MAX_LENGTH = 100
MAX_APPROVER_GROUPS = 10
MAX_TOOL_RULES = 50
TOOL_MATCH_MAX_LENGTH = 200
MAX_TRIGGERS = 20
MAX_THREADS_PER_HOUR_LIMIT = 10000
MAX_DURATION = timedelta(days=3650)
MAX_MAX_MESSAGES = 100
MAX_THREAD_CONTEXT_MESSAGES = 1000  # conversations.replies pages: 5 calls of 200 at most
MIN_THREAD_CONTEXT_CHARACTERS = 200
MAX_THREAD_CONTEXT_CHARACTERS = 100_000

NAME_RE = re.compile(r"[-a-zA-Z0-9_]+")  # Django's slug, so the model's SlugField agrees
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HEADER_NAME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an RFC 9110 token
# Kubernetes names: a namespace is a DNS label, an agent's name a DNS subdomain.
KUBERNETES_NAMESPACE_RE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
KUBERNETES_NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
SLACK_ID_MAX_LENGTH = 32
CHANNEL_ID_RE = re.compile(r"[CGD][A-Z0-9]{1,31}")
USER_GROUP_ID_RE = re.compile(r"S[A-Z0-9]{1,31}")
USER_ID_RE = re.compile(r"[UW][A-Z0-9]{1,31}")
PUBLIC_OR_PRIVATE_CHANNEL_ID_RE = re.compile(r"[CG][A-Z0-9]{1,31}")
MAX_SUGGESTED_PROMPTS = 4  # Slack: "up to four suggested prompts" (docs/slack-direct-messages.md)
SUGGESTED_PROMPT_MAX_LENGTH = 300  # ours: a prompt is a line, not a document
MAX_ALLOWED_USERS = 500
MAX_ALLOWED_GROUPS = 10  # as approverGroups
MAX_DAILY_TOKENS = 10**12

# spec.chat.files (issue 30): the most a Binding may let through.
MAX_FILE_BYTES = 100 * 1024 * 1024  # a file held in a worker's memory while it goes to the agent
MAX_FILES_OUT = 20
MAX_FILE_TYPES = 50
