from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.urls import URLPattern, path, reverse
from django.utils import timezone

from kourier.admin_site import ReadOnlyAdmin

from .export import stream_csv
from .models import AuditEvent

# Page and error markers of the list: the export takes every row the filters and search select.
NOT_FILTERS = {"p", "e"}


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    """Read-only: the audit log is append-only, so the admin browses it and nothing else.

    Filters by Binding, action, Slack user and date (``?at__gte=…&at__lt=…`` for any range); search
    by interaction (``interaction 12``), actor or Binding; each row has its detail page. The list, as
    filtered, and each detail page export as CSV (``export/`` with the list's query string)."""

    list_display = ["at", "action", "binding_name", "actor_kind", "actor_id", "requester", "subject"]
    list_filter = ["action", "binding_name", "actor_id", ("at", admin.DateFieldListFilter), "actor_kind"]
    search_fields = ["subject", "actor_id", "binding_name"]
    date_hierarchy = "at"
    readonly_fields = [
        "at", "action", "binding_name", "actor_kind", "actor_id", "requester", "policy", "subject", "details",
        "previous_hash", "hash", "key_id",
    ]  # fmt: skip

    def get_urls(self) -> list[URLPattern]:
        export = path(
            "export/",
            self.admin_site.admin_view(self.export_view),
            name=f"{self.opts.app_label}_{self.opts.model_name}_export",
        )
        return [export, *super().get_urls()]

    def export_url(self, query: QueryDict) -> str:
        kept = query.copy()
        for key in NOT_FILTERS:
            kept.pop(key, None)
        url = reverse(f"{self.admin_site.name}:{self.opts.app_label}_{self.opts.model_name}_export")
        return f"{url}?{kept.urlencode()}" if kept else url

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        extra_context = {**(extra_context or {}), "export_url": self.export_url(request.GET)}
        return super().changelist_view(request, extra_context)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        one_row = QueryDict(mutable=True)
        one_row["id__exact"] = unquote(object_id)
        extra_context = {**(extra_context or {}), "export_url": self.export_url(one_row)}
        return super().change_view(request, object_id, form_url, extra_context)

    def export_view(self, request: HttpRequest) -> HttpResponseBase:
        """The rows the list shows for the same query string (filters, search, dates, ordering)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            return HttpResponseBadRequest("These filters do not apply to the audit.")
        response = StreamingHttpResponse(stream_csv(changelist.queryset), content_type="text/csv")
        filename = f"audit-{timezone.now():%Y%m%d-%H%M%S}.csv"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
