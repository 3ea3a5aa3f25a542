"""deploy/kubernetes/: every object valid against Kubernetes' own schemas, and what the operations
guide relies on: probes, graceful shutdown, one beat, references that resolve, the Ingress's paths,
every pod's /metrics found by Prometheus."""

import re
import shutil
import subprocess

import pytest
import yaml
from django.conf import settings
from django.core.management import get_commands
from kubernetes_validate import validate

from tests.support.kustomize import (
    KUBERNETES,
    KUSTOMIZATION,
    KubernetesObject,
    container,
    listed_files,
    objects_of,
    one,
    pod_spec,
)
from tests.support.production import BEHIND_TLS

# The oldest Kubernetes the manifests are for: every object must be valid there (and so later).
KUBERNETES_VERSION = "1.30.0"
IMAGE = "kourier"  # the one image every workload runs; an overlay gives its registry and tag

BASE = objects_of(listed_files(KUBERNETES / "base"))
SOCKET_MODE = objects_of(listed_files(KUBERNETES / "socket-mode"))
EVERY_OBJECT = objects_of([path for path in sorted(KUBERNETES.rglob("*.yaml")) if path.name != KUSTOMIZATION])
WORKLOADS = [o for o in BASE + SOCKET_MODE if o["kind"] in ("Deployment", "Job")]
DEPLOYMENTS = [o for o in WORKLOADS if o["kind"] == "Deployment"]


# Every Deployment runs Kourier's code; all but the web's run it with no web process to add them up.
WITHOUT_A_WEB_PROCESS = [o for o in DEPLOYMENTS if o["metadata"]["name"] != "kourier-web"]


def name_of(thing: KubernetesObject) -> str:
    return f"{thing['kind']}/{thing['metadata']['name']}"


def env_of(workload: KubernetesObject) -> dict[str, str]:
    return {variable["name"]: variable.get("value", "") for variable in container(workload).get("env", [])}


def scrape_annotations(workload: KubernetesObject) -> dict[str, str]:
    annotations = workload["spec"]["template"]["metadata"].get("annotations", {})
    return {name: value for name, value in annotations.items() if name.startswith("prometheus.io/")}


def test_every_object_file_is_listed_by_a_kustomization():
    overlays = [path.parent for path in KUBERNETES.rglob(KUSTOMIZATION)]
    listed = {path for overlay in overlays for path in listed_files(overlay)}
    files = {path for path in KUBERNETES.rglob("*.yaml") if path.name != KUSTOMIZATION}
    assert files - listed == set()


# The Prometheus Operator's kinds are not Kubernetes' own: their schemas are not in kubernetes-validate.
OPERATOR_KINDS = [o for o in EVERY_OBJECT if o["apiVersion"].startswith("monitoring.coreos.com/")]
KUBERNETES_OBJECTS = [o for o in EVERY_OBJECT if o not in OPERATOR_KINDS]


@pytest.mark.parametrize("thing", KUBERNETES_OBJECTS, ids=name_of)
def test_each_object_is_valid_for_kubernetes(thing):
    # Raises naming the field that is wrong; otherwise says which schemas it checked against.
    assert KUBERNETES_VERSION.startswith(validate(thing, KUBERNETES_VERSION, strict=True) + ".")


def test_an_unknown_field_is_caught():
    web = one(BASE, "Deployment", "kourier-web")
    misspelt = {**web, "spec": {**web["spec"], "replica": 2}}
    with pytest.raises(Exception, match="replica"):
        validate(misspelt, KUBERNETES_VERSION, strict=True)


def test_the_web_deployment_is_probed_on_readyz_and_healthz():
    web = container(one(BASE, "Deployment", "kourier-web"))
    ports = {port["name"] for port in web["ports"]}

    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {web["readinessProbe"]["httpGet"]["port"], web["livenessProbe"]["httpGet"]["port"]} <= ports


@pytest.mark.parametrize("path", ["/readyz", "/healthz"])
def test_the_probes_paths_are_exempt_from_the_redirect_to_https(path):
    # SecurityMiddleware matches the exemptions against the path without its leading slash.
    assert any(re.search(pattern, path.lstrip("/")) for pattern in settings.SECURE_REDIRECT_EXEMPT)


def test_the_web_pods_own_ip_is_an_allowed_host_for_the_probes():
    env = container(one(BASE, "Deployment", "kourier-web"))["env"]
    names = [variable["name"] for variable in env]
    allowed_hosts = env[names.index("ALLOWED_HOSTS")]["value"].split(",")
    pod_ip = env[names.index("POD_IP")]

    assert pod_ip["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    # Kubernetes expands $(NAME) only from variables defined before it.
    assert names.index("POD_IP") < names.index("ALLOWED_HOSTS")
    assert allowed_hosts == ["$(PUBLIC_HOST)", "$(POD_IP)"]
    assert one(BASE, "ConfigMap", "kourier-config")["data"]["PUBLIC_HOST"]


def test_a_worker_has_longer_to_stop_than_its_hand_over_takes():
    grace = pod_spec(one(BASE, "Deployment", "kourier-worker"))["terminationGracePeriodSeconds"]
    configured = float(one(BASE, "ConfigMap", "kourier-config")["data"]["WORKER_SHUTDOWN_SECONDS"])

    assert grace > settings.WORKER_SHUTDOWN_SECONDS
    assert grace > configured


def test_beat_is_exactly_one_and_never_two_during_an_update():
    beat = one(BASE, "Deployment", "kourier-beat")

    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}


def test_socket_mode_is_its_own_optional_component():
    assert [name_of(o) for o in SOCKET_MODE] == [
        "Deployment/kourier-socket",
        "PodDisruptionBudget/kourier-socket",
    ]
    assert not [o for o in BASE if o["metadata"]["name"] == "kourier-socket"]


def test_socket_mode_runs_two_replicas_that_a_drain_or_an_update_never_takes_both_of():
    socket = one(SOCKET_MODE, "Deployment", "kourier-socket")
    budget = one(SOCKET_MODE, "PodDisruptionBudget", "kourier-socket")

    assert socket["spec"]["replicas"] == 2
    assert socket["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert budget["spec"]["minAvailable"] == 1
    assert budget["spec"]["selector"]["matchLabels"] == socket["spec"]["selector"]["matchLabels"]


def test_the_socket_process_finishes_what_it_holds_before_kubernetes_kills_it():
    socket = one(SOCKET_MODE, "Deployment", "kourier-socket")
    command = container(socket)["command"]
    grace = float(command[command.index("--grace-seconds") + 1])

    assert grace < socket["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]


@pytest.mark.parametrize("workload", WORKLOADS, ids=name_of)
def test_every_configmap_and_secret_a_workload_reads_is_in_the_base(workload):
    defined = {name_of(o) for o in BASE}
    sources = container(workload).get("envFrom", [])
    referenced = {f"ConfigMap/{s['configMapRef']['name']}" for s in sources if "configMapRef" in s} | {
        f"Secret/{s['secretRef']['name']}" for s in sources if "secretRef" in s
    }

    assert "Secret/kourier-settings" in referenced
    assert referenced <= defined


def test_the_secrets_in_the_base_hold_no_value():
    secrets = [o for o in BASE if o["kind"] == "Secret"]

    assert {name_of(s) for s in secrets} == {"Secret/kourier-settings", "Secret/kourier-tokens"}
    assert [value for s in secrets for value in s["stringData"].values() if value] == []


@pytest.mark.parametrize("workload", WORKLOADS, ids=name_of)
def test_every_workload_runs_the_image_as_a_user_without_privileges(workload):
    pod = pod_spec(workload)
    only = container(workload)

    assert only["image"] == IMAGE
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert only["securityContext"]["allowPrivilegeEscalation"] is False
    assert only["securityContext"]["readOnlyRootFilesystem"] is True


@pytest.mark.parametrize("workload", DEPLOYMENTS, ids=name_of)
def test_every_deployment_selects_its_own_pods(workload):
    selector = workload["spec"]["selector"]["matchLabels"]
    assert selector.items() <= workload["spec"]["template"]["metadata"]["labels"].items()


@pytest.mark.parametrize(
    ("workload", "command"),
    [
        ("kourier-web", ["python", "-m", "daphne"]),
        ("kourier-worker", ["python", "-m", "celery", "-A", "kourier", "worker"]),
        ("kourier-beat", ["python", "-m", "celery", "-A", "kourier", "beat"]),
        ("kourier-socket", ["python", "manage.py", "socket"]),
        ("kourier-migrate", ["python", "manage.py", "migrate"]),
    ],
)
def test_each_workload_starts_its_process(workload, command):
    [found] = [w for w in WORKLOADS if w["metadata"]["name"] == workload]
    started = container(found)["command"]

    assert started[: len(command)] == command
    if command[1] == "manage.py":
        assert command[2] in get_commands()
    if command[2] == "daphne":
        assert started[-1] == "kourier.asgi:application"


def test_the_ingress_sends_slack_and_triggers_to_the_web_service():
    ingress = one(BASE, "Ingress", "kourier")
    service = one(BASE, "Service", "kourier-web")
    web = one(BASE, "Deployment", "kourier-web")
    [rule] = ingress["spec"]["rules"]
    backends = {
        path["path"]: (path["pathType"], path["backend"]["service"]) for path in rule["http"]["paths"]
    }
    service_ports = {port["name"]: port["targetPort"] for port in service["spec"]["ports"]}

    assert backends == {
        "/slack/": ("Prefix", {"name": "kourier-web", "port": {"name": "http"}}),
        "/triggers/": ("Prefix", {"name": "kourier-web", "port": {"name": "http"}}),
    }
    assert service_ports["http"] in {port["name"] for port in container(web)["ports"]}
    assert service["spec"]["selector"].items() <= web["spec"]["template"]["metadata"]["labels"].items()
    assert ingress["spec"]["tls"][0]["hosts"] == [rule["host"]]


def test_the_config_turns_on_what_check_deploy_asks_for_behind_tls():
    data = one(BASE, "ConfigMap", "kourier-config")["data"]

    assert {name: data.get(name) for name in BEHIND_TLS} == BEHIND_TLS
    assert data["DEBUG"] == "false"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (with its kustomize) is not installed")
def test_the_example_overlay_renders_to_valid_objects(tmp_path):
    tree = tmp_path / "kubernetes"
    shutil.copytree(KUBERNETES, tree)
    example = tree / "example"
    for name in ("settings.env", "tokens.env"):
        shutil.copy(example / f"{name}.example", example / name)
    kustomization = example / KUSTOMIZATION
    # With Socket Mode, as an operator would turn it on.
    # With Socket Mode, external datastores and the Prometheus Operator, as an operator would add them.
    kustomization.write_text(
        kustomization.read_text().replace(
            "# components:\n#   - ../socket-mode\n#   - ../external-datastores\n#   - ../prometheus-operator",
            "components:\n  - ../socket-mode\n  - ../external-datastores\n  - ../prometheus-operator",
        )
    )

    rendered = subprocess.run(
        ["kubectl", "kustomize", str(example)], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    objects = [o for o in yaml.safe_load_all(rendered) if o]

    for thing in objects:
        if not thing["apiVersion"].startswith("monitoring.coreos.com/"):
            validate(thing, KUBERNETES_VERSION, strict=True)
    assert {"Deployment/kourier-socket", "ServiceMonitor/kourier", "NetworkPolicy/kourier-datastores"} <= {
        name_of(o) for o in objects
    }
    workloads = [o for o in objects if o["kind"] in ("Deployment", "Job")]
    # The platform's Secret of datastore URLs comes last in every workload, so its values win.
    assert {container(o)["envFrom"][-1]["secretRef"]["name"] for o in workloads} == {"kourier-datastores"}
    # 5432 and 6379 are reachable only at the datastores' addresses.
    rules = [rule for o in objects if o["kind"] == "NetworkPolicy" for rule in o["spec"].get("egress", [])]
    for rule in rules:
        if {port["port"] for port in rule["ports"]} & {5432, 6379}:
            assert [peer["ipBlock"]["cidr"] for peer in rule["to"]]
    assert {o["metadata"].get("namespace") for o in objects if o["kind"] != "Namespace"} == {"kourier"}
    secrets = [o for o in objects if o["kind"] == "Secret"]
    assert [s.get("stringData") for s in secrets] == [None, None]  # the values replace the empty ones
    assert {container(o)["image"] for o in objects if o["kind"] in ("Deployment", "Job")} == {
        "registry.example.com/kourier:0.1.0"
    }


@pytest.mark.parametrize("workload", DEPLOYMENTS, ids=name_of)
def test_every_deployment_is_annotated_for_prometheus_on_the_one_port_it_declares(workload):
    annotations = scrape_annotations(workload)
    # kubernetes_sd's pod role makes a target of each declared port: with one, the README's relabelling
    # to the annotated port makes one target a pod.
    [port] = container(workload)["ports"]

    assert annotations == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(port["containerPort"]),
        "prometheus.io/path": "/metrics",
    }


@pytest.mark.parametrize("workload", WITHOUT_A_WEB_PROCESS, ids=name_of)
def test_a_process_without_a_web_process_serves_its_own_metrics_from_a_mounted_empty_dir(workload):
    env = env_of(workload)
    [port] = container(workload)["ports"]
    mounts = {mount["mountPath"]: mount["name"] for mount in container(workload)["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in pod_spec(workload)["volumes"]}

    assert port["name"] == "metrics"
    assert env["METRICS_PORT"] == str(port["containerPort"])
    # The root filesystem is read-only: prometheus_client's files need a volume, the pod's own.
    assert volumes[mounts[env["PROMETHEUS_MULTIPROC_DIR"]]]["emptyDir"] == {}


def test_the_webs_metrics_are_on_its_http_port_from_its_one_process():
    web = one(BASE, "Deployment", "kourier-web")
    [port] = container(web)["ports"]

    assert scrape_annotations(web)["prometheus.io/port"] == str(port["containerPort"])
    assert port["name"] == "http"
    assert any(re.search(pattern, "metrics") for pattern in settings.SECURE_REDIRECT_EXEMPT)
    # One Daphne a pod: nothing to add up, and no port of its own beside the web's.
    assert "PROMETHEUS_MULTIPROC_DIR" not in env_of(web)
    assert "METRICS_PORT" not in env_of(web)


def test_every_pod_reads_the_metrics_token_from_a_secret():
    settings_secret = one(BASE, "Secret", "kourier-settings")

    assert "METRICS_TOKEN" in settings_secret["stringData"]
    assert "AUDIT_KEY" in settings_secret["stringData"]
    for workload in DEPLOYMENTS:
        sources = container(workload)["envFrom"]
        assert {"secretRef": {"name": "kourier-settings"}} in sources


# --- Issue 34, point 4: secrets as files, readiness, network policy, ServiceMonitor --------------------

TOKENS_DIRECTORY = "/var/run/secrets/kourier"
SLACK_CALLERS = ["kourier-web", "kourier-worker", "kourier-socket"]


@pytest.mark.parametrize("name", SLACK_CALLERS)
def test_the_tokens_are_a_mounted_secret_in_a_directory_secrets_may_be_read_from(name):
    workload = one(BASE + SOCKET_MODE, "Deployment", name)
    [mount] = [m for m in container(workload)["volumeMounts"] if m["mountPath"] == TOKENS_DIRECTORY]
    [volume] = [v for v in pod_spec(workload)["volumes"] if v["name"] == mount["name"]]
    config = one(BASE, "ConfigMap", "kourier-config")["data"]

    assert volume["secret"]["secretName"] == "kourier-tokens"
    assert mount["readOnly"] is True
    assert "subPath" not in mount  # a subPath mount is never updated: a rotated token would not be seen
    assert "kourier-tokens" not in {
        s.get("secretRef", {}).get("name") for s in container(workload)["envFrom"]
    }
    assert config["SECRET_FILE_DIRECTORIES"].split(",") == [TOKENS_DIRECTORY]


@pytest.mark.parametrize("workload", DEPLOYMENTS, ids=name_of)
def test_every_deployment_is_ready_only_while_its_readyz_says_so_on_a_port_it_declares(workload):
    probe = container(workload)["readinessProbe"]["httpGet"]

    assert probe["path"] == "/readyz"
    assert probe["port"] in {port["name"] for port in container(workload)["ports"]}


def policies_selecting(workload: KubernetesObject) -> list[KubernetesObject]:
    labels = workload["spec"]["template"]["metadata"]["labels"]
    found = []
    for policy in (o for o in BASE if o["kind"] == "NetworkPolicy"):
        selector = policy["spec"]["podSelector"]
        matches = all(labels.get(key) == value for key, value in selector.get("matchLabels", {}).items())
        matches &= all(labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", []))
        if matches:
            found.append(policy)
    return found


@pytest.mark.parametrize("workload", WORKLOADS, ids=name_of)
def test_a_network_policy_lets_into_each_pod_only_the_ports_it_declares(workload):
    policies = policies_selecting(workload)
    declared = {port["containerPort"] for port in container(workload).get("ports", [])}
    opened = {
        port["port"]
        for policy in policies
        for rule in policy["spec"].get("ingress", [])
        for port in rule["ports"]
    }

    assert "kourier-default-deny" in {policy["metadata"]["name"] for policy in policies}
    assert all(set(policy["spec"]["policyTypes"]) >= {"Egress"} for policy in policies)
    assert opened == declared


def test_only_the_processes_that_call_slack_and_agents_may_leave_for_https():
    for workload in WORKLOADS:
        ports = {
            port["port"]
            for policy in policies_selecting(workload)
            for rule in policy["spec"].get("egress", [])
            for port in rule["ports"]
        }
        calls_out = workload["metadata"]["name"] in SLACK_CALLERS
        assert (443 in ports) == calls_out, name_of(workload)
        assert {53, 5432} <= ports


def test_the_service_monitor_scrapes_every_metrics_port_with_the_metrics_token():
    component = objects_of(listed_files(KUBERNETES / "prometheus-operator"))
    monitor = one(component, "ServiceMonitor", "kourier")
    services = [o for o in BASE + component if o["kind"] == "Service"]
    scraped_ports = {endpoint["port"] for endpoint in monitor["spec"]["endpoints"]}
    service_ports = {
        port["name"]
        for service in services
        if service["metadata"]["labels"].items() >= monitor["spec"]["selector"]["matchLabels"].items()
        for port in service["spec"]["ports"]
    }
    declared = {port["name"] for workload in DEPLOYMENTS for port in container(workload)["ports"]}

    assert scraped_ports == service_ports == declared == {"http", "metrics"}
    assert {(e["path"], e["bearerTokenSecret"]["key"]) for e in monitor["spec"]["endpoints"]} == {
        ("/metrics", "METRICS_TOKEN")
    }
    assert "METRICS_TOKEN" in one(BASE, "Secret", "kourier-settings")["stringData"]
