"""Strategies for pod templates and pod_overrides, plausible and hostile.

Manifests are what users write in a pod template file or an ``executor_config``
``pod_override``, in the API server's camelCase: JSON-like dicts without nulls, holding
only fields the Kubernetes v1 Pod model knows, each with a value of the model's type, so
that the provider's deserializer takes them unchanged (the project's ``tests/compat`` checks that).
Falsy values (``False``, ``0``, ``""``, ``[]``, ``{}``, including empty model objects such
as ``securityContext: {}``) are generated on purpose: the merge rules treat them apart.

Labels and annotations never use the keys the executor reads a pod's identity from
(:data:`RESERVED_KEYS`); tests that want those keys add them explicitly. The hostile
ones (what a broken template, override or hook may hold) are
:mod:`~k8s_workloads.testing.strategies._hostile`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import strategies as st

if TYPE_CHECKING:
    from k8s_workloads.pods.manifest import Manifest

__all__ = [
    "RESERVED_KEYS",
    "container_args",
    "dns_labels",
    "kube_images",
    "label_keys",
    "label_values",
    "namespaces",
    "pod_overrides",
    "pod_templates",
    "templates_and_overrides",
]

RESERVED_KEYS = frozenset(
    {
        "dag_id",
        "task_id",
        "try_number",
        "map_index",
        "run_id",
        "logical_date",
        "execution_date",
        "airflow-worker",
        "kubernetes_executor",
        "airflow_version",
        "airflow-workload-type",
        "callback_id",
    }
)
"""Label and annotation keys the executor writes a pod's identity in: never generated here."""

# --------------------------------------------------------------------------------------
# Names and keys

_REALISTIC_NAMES = [
    "sidecar",
    "git-sync",
    "log-shipper",
    "init-db",
    "wait-for-db",
    "istio-proxy",
    "worker",
    "statsd",
    "a",
    "x1",
]

dns_labels = st.one_of(
    st.sampled_from(_REALISTIC_NAMES),
    st.from_regex(r"[a-z]([-a-z0-9]{0,18}[a-z0-9])?", fullmatch=True),
)
"""DNS-1123 labels (for object names: config maps, secrets, claims, namespaces)."""

dns_subdomains = st.one_of(
    dns_labels,
    st.from_regex(
        r"[a-z0-9]([-a-z0-9]{0,10}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?){1,2}",
        fullmatch=True,
    ),
)

namespaces = st.one_of(
    st.sampled_from(["default", "airflow", "team-a", "k8s-executor"]), dns_labels
)
"""Non-empty namespaces (DNS-1123 labels), as an executor is configured with."""

_PREFIXES = st.sampled_from(
    ["example.com", "app.kubernetes.io", "team.example.org", "sidecar.istio.io", "k8s.io"]
)
_QUALIFIED_NAMES = st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?", fullmatch=True)

label_keys = st.one_of(
    st.sampled_from(
        [
            "app",
            "team",
            "tier",
            "component",
            "release",
            "environment",
            "app.kubernetes.io/name",
            "app.kubernetes.io/part-of",
            "example.com/owner",
            "sidecar.istio.io/inject",
        ]
    ),
    st.builds(lambda prefix, name: f"{prefix}/{name}", _PREFIXES, _QUALIFIED_NAMES),
    _QUALIFIED_NAMES,
).filter(lambda key: key not in RESERVED_KEYS)
"""Valid label (and annotation) keys, never one of :data:`RESERVED_KEYS`."""

_non_empty_label_values = st.one_of(
    st.sampled_from(["true", "false", "worker", "v1.2.3", "Team_A", "0"]),
    st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,30}[A-Za-z0-9])?", fullmatch=True),
)
label_values = st.one_of(st.just(""), _non_empty_label_values)
"""Valid label values, the empty one included."""

_annotation_values = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["true", "", '{"json": [1, 2]}', "runtime/default"]),
)

# --------------------------------------------------------------------------------------
# Container parts

_image_names = st.sampled_from(
    [
        "apache/airflow:3.3.2",
        "apache/airflow:3.3.2-python3.12",
        "registry.example.com/team/worker:1.0",
        "python:3.12-slim",
        "busybox",
        "ghcr.io/org/img@sha256:" + "0" * 64,
    ]
)
kube_images = st.one_of(st.none(), _image_names)
"""``kube_image`` as the executor passes it: ``repository:tag`` or None."""

_images = st.one_of(st.just(""), _image_names)
"""Container images in templates and overrides: the empty one keeps the other side's."""

_argv_words = st.one_of(
    st.sampled_from(["python", "-m", "bash", "-c", "echo hi", "--flag", "/entrypoint", ""]),
    st.text(max_size=20),
)
container_args = st.lists(_argv_words, max_size=5)
"""argv lists, empty ones included."""

_ENV_NAMES = st.one_of(
    st.sampled_from(
        ["AIRFLOW__CORE__LOAD_EXAMPLES", "PYTHONUNBUFFERED", "HTTP_PROXY", "LOG_LEVEL", "TZ"]
    ),
    st.from_regex(r"[A-Z_][A-Z0-9_]{0,15}", fullmatch=True),
)

_env_vars = st.one_of(
    st.fixed_dictionaries({"name": _ENV_NAMES}, optional={"value": st.text(max_size=20)}),
    st.fixed_dictionaries(
        {
            "name": _ENV_NAMES,
            "valueFrom": st.fixed_dictionaries(
                {
                    "secretKeyRef": st.fixed_dictionaries(
                        {"key": st.sampled_from(["password", "token", "conn"])},
                        optional={"name": dns_labels, "optional": st.booleans()},
                    )
                }
            ),
        }
    ),
)

_env_from = st.one_of(
    st.fixed_dictionaries(
        {"configMapRef": st.fixed_dictionaries({"name": dns_labels})},
        optional={"prefix": st.sampled_from(["", "APP_", "CFG_"])},
    ),
    st.fixed_dictionaries(
        {
            "secretRef": st.fixed_dictionaries(
                {"name": dns_labels}, optional={"optional": st.booleans()}
            )
        }
    ),
)

_port_names = st.from_regex(r"[a-z]([-a-z0-9]{0,12}[a-z0-9])?", fullmatch=True)
_ports = st.fixed_dictionaries(
    {"containerPort": st.integers(1, 65535)},
    optional={"name": _port_names, "protocol": st.sampled_from(["TCP", "UDP"])},
)

_cpu = st.sampled_from(["100m", "250m", "500m", "1", "2", "1500m"])
_memory = st.sampled_from(["64Mi", "128Mi", "512Mi", "1Gi", "2Gi", "500M", "1G"])
_quantities = st.fixed_dictionaries(
    {}, optional={"cpu": _cpu, "memory": _memory, "ephemeral-storage": _memory}
)
_resources = st.fixed_dictionaries({}, optional={"requests": _quantities, "limits": _quantities})

_mount_paths = st.sampled_from(
    ["/data", "/scratch", "/opt/airflow/dags", "/etc/config", "/var/run/secrets/app", "/cache"]
)


_VOLUME_NAMES = ["data", "config", "secrets", "cache", "dags", "logs"]
"""Volume names: one pool for volumes and mounts, so mounts mostly find their volume."""
_volume_mounts = st.fixed_dictionaries(
    {"name": st.sampled_from(_VOLUME_NAMES), "mountPath": _mount_paths},
    optional={"readOnly": st.booleans(), "subPath": st.sampled_from(["", "sub", "a/b"])},
)


_container_security_contexts = st.fixed_dictionaries(
    {},
    optional={
        "runAsUser": st.integers(0, 65535),
        "runAsNonRoot": st.booleans(),
        "readOnlyRootFilesystem": st.booleans(),
        "allowPrivilegeEscalation": st.booleans(),
        "capabilities": st.fixed_dictionaries(
            {},
            optional={
                "drop": st.sampled_from([["ALL"], []]),
                "add": st.lists(st.sampled_from(["NET_BIND_SERVICE", "SYS_PTRACE"]), unique=True),
            },
        ),
    },
)

_probe_ports = st.one_of(st.integers(1, 65535), st.sampled_from(["http", "metrics"]))
_probe_timing = {
    "initialDelaySeconds": st.integers(0, 300),
    "periodSeconds": st.integers(1, 60),
    "timeoutSeconds": st.integers(1, 30),
    "failureThreshold": st.integers(1, 10),
}
_probes = st.one_of(
    st.fixed_dictionaries(
        {
            "httpGet": st.fixed_dictionaries(
                {"port": _probe_ports},
                optional={
                    "path": st.sampled_from(["/", "/health", "/healthz"]),
                    "scheme": st.sampled_from(["HTTP", "HTTPS"]),
                },
            )
        },
        optional=_probe_timing,
    ),
    st.fixed_dictionaries(
        {"exec": st.fixed_dictionaries({"command": st.lists(_argv_words, min_size=1, max_size=3)})},
        optional=_probe_timing,
    ),
    st.fixed_dictionaries(
        {"tcpSocket": st.fixed_dictionaries({"port": _probe_ports})}, optional=_probe_timing
    ),
)


_container_bodies = st.fixed_dictionaries(
    {},
    optional={
        "image": _images,
        "imagePullPolicy": st.sampled_from(["Always", "IfNotPresent", "Never"]),
        "command": st.lists(_argv_words, max_size=3),
        "args": st.lists(_argv_words, max_size=3),
        "env": st.lists(_env_vars, max_size=3),
        "envFrom": st.lists(_env_from, max_size=2),
        "ports": st.lists(_ports, max_size=2),
        "resources": _resources,
        "volumeMounts": st.lists(_volume_mounts, max_size=2),
        "securityContext": _container_security_contexts,
        "livenessProbe": _probes,
        "workingDir": st.sampled_from(["", "/opt/airflow", "/work"]),
        "terminationMessagePolicy": st.sampled_from(["File", "FallbackToLogsOnError"]),
    },
)
"""Every container field but the name; the image may be missing or empty."""

_imaged_container_bodies = st.builds(
    lambda body, image: {**body, "image": image}, _container_bodies, _image_names
)
"""Every container field but the name, with an image: the API server requires one on
every container of a pod (``spec.containers[i].image: Required value``)."""


# --------------------------------------------------------------------------------------
# Pod spec parts

_secret_names = st.one_of(st.sampled_from(["airflow-secrets", "db-creds", "tls"]), dns_labels)
_modes = st.sampled_from([0o400, 0o440, 0o644, 0o755, 0])


_volume_sources = st.one_of(
    st.fixed_dictionaries(
        {
            "emptyDir": st.fixed_dictionaries(
                {}, optional={"medium": st.sampled_from(["", "Memory"]), "sizeLimit": _memory}
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "configMap": st.fixed_dictionaries(
                {"name": dns_labels}, optional={"defaultMode": _modes, "optional": st.booleans()}
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "secret": st.fixed_dictionaries(
                {"secretName": _secret_names},
                optional={"defaultMode": _modes, "optional": st.booleans()},
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "persistentVolumeClaim": st.fixed_dictionaries(
                {"claimName": dns_labels}, optional={"readOnly": st.booleans()}
            )
        }
    ),
)
"""One volume source (emptyDir, configMap, secret, persistentVolumeClaim)."""


_node_label_keys = st.sampled_from(
    [
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/zone",
        "pool",
    ]
)
_node_selectors = st.dictionaries(_node_label_keys, label_values, max_size=2)

_tolerations = st.fixed_dictionaries(
    {},
    optional={
        "key": _node_label_keys,
        "operator": st.sampled_from(["Equal", "Exists"]),
        "value": label_values,
        "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute", ""]),
        "tolerationSeconds": st.integers(0, 3600),
    },
)

_node_selector_requirements = st.one_of(
    st.fixed_dictionaries(
        {
            "key": _node_label_keys,
            "operator": st.sampled_from(["In", "NotIn"]),
            "values": st.lists(_non_empty_label_values, min_size=1, max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {"key": _node_label_keys, "operator": st.sampled_from(["Exists", "DoesNotExist"])}
    ),
)
_node_selector_terms = st.fixed_dictionaries(
    {}, optional={"matchExpressions": st.lists(_node_selector_requirements, max_size=2)}
)
_affinities = st.fixed_dictionaries(
    {},
    optional={
        "nodeAffinity": st.fixed_dictionaries(
            {},
            optional={
                "requiredDuringSchedulingIgnoredDuringExecution": st.fixed_dictionaries(
                    {"nodeSelectorTerms": st.lists(_node_selector_terms, min_size=1, max_size=2)}
                ),
                "preferredDuringSchedulingIgnoredDuringExecution": st.lists(
                    st.fixed_dictionaries(
                        {"weight": st.integers(1, 100), "preference": _node_selector_terms}
                    ),
                    max_size=2,
                ),
            },
        )
    },
)

_pod_security_contexts = st.fixed_dictionaries(
    {},
    optional={
        "runAsUser": st.integers(0, 65535),
        "runAsGroup": st.integers(0, 65535),
        "fsGroup": st.integers(0, 65535),
        "runAsNonRoot": st.booleans(),
    },
)


_spec_bodies = st.fixed_dictionaries(
    {},
    optional={
        "nodeSelector": _node_selectors,
        "tolerations": st.lists(_tolerations, max_size=2),
        "affinity": _affinities,
        "serviceAccountName": st.one_of(st.just(""), dns_subdomains),
        "securityContext": _pod_security_contexts,
        "hostNetwork": st.booleans(),
        # Every policy a layer may ask for: the builders replace it by Never (issue 29).
        "restartPolicy": st.sampled_from(["Never", "Always", "OnFailure"]),
        "priorityClassName": st.sampled_from(["", "high-priority", "system-cluster-critical"]),
        "imagePullSecrets": st.lists(st.fixed_dictionaries({"name": _secret_names}), max_size=2),
        "terminationGracePeriodSeconds": st.integers(0, 600),
    },
)
"""Every pod spec field but the containers, init containers and volumes."""


# --------------------------------------------------------------------------------------
# Metadata

_pod_names = st.one_of(
    st.just(""), st.from_regex(r"[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?", fullmatch=True)
)

_metadata = st.fixed_dictionaries(
    {},
    optional={
        "name": _pod_names,
        "namespace": st.one_of(st.just(""), namespaces),
        "labels": st.dictionaries(label_keys, label_values, max_size=4),
        "annotations": st.dictionaries(label_keys, _annotation_values, max_size=4),
    },
)

# --------------------------------------------------------------------------------------
# Pods


@st.composite
def _pods(
    draw: st.DrawFn,
    *,
    main_names: list[str],
    init_names: list[str],
    template: bool,
    images: bool = False,
) -> Manifest:
    """A pod with these container and init container names, every other field optional
    (with ``images``, every container has an image)."""
    bodies = _imaged_container_bodies if images else _container_bodies
    volume_names = draw(st.lists(st.sampled_from(_VOLUME_NAMES), unique=True, max_size=3))
    spec: Manifest = {
        "containers": [{"name": name, **draw(bodies)} for name in main_names],
        **draw(_spec_bodies),
    }
    # Empty lists now and then: falsy, so they never replace the other side's.
    if init_names or draw(st.integers(0, 4)) == 0:
        spec["initContainers"] = [{"name": name, **draw(bodies)} for name in init_names]
    if volume_names or draw(st.integers(0, 4)) == 0:
        spec["volumes"] = [{"name": name, **draw(_volume_sources)} for name in volume_names]
    pod: Manifest = {}
    if template and draw(st.booleans()):
        pod["apiVersion"] = "v1"
        pod["kind"] = "Pod"
    if draw(st.integers(0, 3)) > 0:
        pod["metadata"] = draw(_metadata)
    # The provider's model requires spec.containers: a spec here always has them.
    if template or draw(st.integers(0, 3)) > 0:
        pod["spec"] = spec
    return pod


_generated_names = st.from_regex(r"[a-z]([-a-z0-9]{0,18}[a-z0-9])?", fullmatch=True)


@st.composite
def _distinct_names(draw: st.DrawFn, count: int) -> list[str]:
    """``count`` distinct DNS-1123 labels, never ``base``: realistic ones or generated."""
    realistic = draw(st.permutations(_REALISTIC_NAMES))
    return [
        realistic[index] if draw(st.booleans()) else f"{draw(_generated_names)}-{index}"
        for index in range(count)
    ]


def _split(names: list[str], counts: list[int]) -> list[list[str]]:
    return [names[sum(counts[:index]) : sum(counts[: index + 1])] for index in range(len(counts))]


@st.composite
def templates_and_overrides(
    draw: st.DrawFn, *, valid: bool
) -> tuple[Manifest | None, Manifest | None]:
    """A pod template and a pod_override, each None about one time in five.

    Templates have 1-3 containers, 0-2 init containers and always a ``spec``; overrides
    the same, but their ``spec`` is optional. With ``valid``, the container and init
    container names of both are all distinct (but for ``base`` in first place) and every
    container has an image, so a pod built from them has unique, valid container names
    and is one the API server admits (the kit's server does: a property test posts them).
    Without it (for parity), the override may reuse the template's init container names
    (merged by name) and leave main container names empty (keeping the template's), and
    an image may be missing or empty (keeping the other side's).
    """
    has_template = draw(st.integers(0, 4)) > 0
    has_override = draw(st.integers(0, 4)) > 0
    counts = [draw(st.integers(1, 3)), draw(st.integers(0, 2))]
    counts += [draw(st.integers(1, 3)), draw(st.integers(0, 2))]
    t_main, t_init, o_main, o_init = _split(draw(_distinct_names(sum(counts))), counts)
    # The executor's container is "base"; templates and overrides often name theirs so.
    if draw(st.booleans()):
        t_main[0] = "base"
    if draw(st.booleans()):
        o_main[0] = "base"
    if not valid:
        # An empty name keeps the other side's; a shared init container name merges.
        o_main = [draw(st.sampled_from([name, ""])) for name in o_main]
        if t_init:
            o_init = list(dict.fromkeys(draw(st.sampled_from([name, *t_init])) for name in o_init))
    template = (
        draw(_pods(main_names=t_main, init_names=t_init, template=True, images=valid))
        if has_template
        else None
    )
    override = (
        draw(_pods(main_names=o_main, init_names=o_init, template=False, images=valid))
        if has_override
        else None
    )
    return template, override


@st.composite
def pod_templates(draw: st.DrawFn) -> Manifest:
    """Pod templates (never None), with distinct container names."""
    counts = [draw(st.integers(1, 3)), draw(st.integers(0, 2))]
    main, init = _split(draw(_distinct_names(sum(counts))), counts)
    if draw(st.booleans()):
        main[0] = "base"
    return draw(_pods(main_names=main, init_names=init, template=True))


@st.composite
def pod_overrides(draw: st.DrawFn) -> Manifest:
    """pod_overrides (never None): ``spec`` optional, main container names maybe empty."""
    counts = [draw(st.integers(1, 3)), draw(st.integers(0, 2))]
    main, init = _split(draw(_distinct_names(sum(counts))), counts)
    main = [draw(st.sampled_from([name, "", "base"])) for name in main]
    return draw(_pods(main_names=main, init_names=init, template=False))
