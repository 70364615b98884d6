"""The checks of scripts/deploy-check: the reference stack (deploy/compose.yaml and the files it names) and the
Kubernetes manifests (deploy/kubernetes/) against the container contract and the service's settings.

Run by scripts/deploy-check in its venv (PyYAML, compose-spec, kubernetes-validate). Exits 1 with every problem
found, one a line; prints one line per part that passed.
"""

import os
import re
import subprocess
import sys
import tempfile

import yaml
from compose_spec import PyCompose

ROOT = os.getcwd()
DEPLOY = os.path.join(ROOT, "deploy")
KUBERNETES = os.path.join(DEPLOY, "kubernetes")

# The container contract (issue #32): the image, its user, where it reads its configuration and secrets, its ports.
IMAGE = "localhost/attestkit:0.1.0"
USER = 10001
CONFIG_PATH = "/etc/attestkit/attestkit.yaml"
SECRETS_DIR = "/run/secrets/attestkit"
PUBLIC_PORT = 8080
BACKEND_PORT = 8081
# Manifests of deploy/kubernetes/ that kustomization.yaml leaves out on purpose (see its header).
NOT_IN_KUSTOMIZATION = {"secret.example.yaml", "migrate-job.yaml"}

problems = []


def problem(text):
    problems.append(text)


def relative(path):
    return os.path.relpath(path, ROOT)


def settings():
    """Every setting of attestkit serve and the secret ones, from ServerSetting.all."""
    source = open(os.path.join(ROOT, "Sources/AttestKitServer/Configuration/ServerSettings.swift")).read()
    found = re.findall(
        r'ServerSetting\(\s*"([a-z0-9.-]+)",\s*\.\w+,\s*default:\s*(?:nil|"[^"]*"),\s*(secret: true)?', source)
    if len(found) < 50:
        sys.exit(f"deploy-check: read only {len(found)} settings from ServerSettings.swift; has its form changed?")
    return {key for key, _ in found}, {key for key, secret in found if secret}


SETTINGS, SECRET_SETTINGS = settings()
SECRET_FILES = {key.replace(".", "-") for key in SECRET_SETTINGS}
SETTING_FILES = {key.replace(".", "-") for key in SETTINGS}


def flatten(value, prefix=""):
    """The dotted keys of a configuration file, as the server reads them (nested objects, or dotted names)."""
    if isinstance(value, dict):
        keys = {}
        for key, item in value.items():
            keys.update(flatten(item, f"{prefix}{key}."))
        return keys
    return {prefix[:-1]: value}


def check_configuration(name, text):
    """A configuration file of attestkit serve: YAML, every key a setting. Returns its dotted keys."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        problem(f"{name}: not YAML: {error}")
        return {}
    if not isinstance(document, dict):
        problem(f"{name}: not a YAML object")
        return {}
    keys = flatten(document)
    for key in sorted(keys):
        if key not in SETTINGS:
            problem(f"{name}: {key} is not a setting of attestkit serve (it would refuse to start)")
    http = {"http.host": "0.0.0.0", "http.port": PUBLIC_PORT, "http.backend-port": BACKEND_PORT}
    for key, expected in http.items():
        if keys.get(key) != expected:
            problem(f"{name}: {key} is {keys.get(key)!r}, the contract says {expected!r}")
    for number in ("shutdown.drain-period", "shutdown.grace-period"):
        if not isinstance(keys.get(number), (int, float)):
            problem(f"{name}: {number} is not set to a number of seconds")
    return keys


def seconds(duration):
    """A compose duration (`30s`, `1m30s`) in seconds."""
    total = 0
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s|us)", str(duration)):
        total += float(amount) * {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 0.000001}[unit]
    return total


def generated_secrets():
    """The file names deploy/generate-secrets makes (run into a throwaway directory)."""
    with tempfile.TemporaryDirectory() as directory:
        target = os.path.join(directory, "secrets")
        result = subprocess.run([os.path.join(DEPLOY, "generate-secrets"), target], capture_output=True, text=True)
        if result.returncode != 0:
            problem(f"deploy/generate-secrets failed: {result.stderr.strip()}")
            return set()
        made = set(os.listdir(target))
        tokens = {t.strip() for t in open(os.path.join(target, "backend-tokens")).read().split(",")}
        if open(os.path.join(target, "prometheus-token")).read().strip() not in tokens:
            problem("deploy/generate-secrets: prometheus-token is not one of backend-tokens")
        return made


def check_compose():
    before = len(problems)
    path = os.path.join(DEPLOY, "compose.yaml")
    text = open(path).read()
    try:
        PyCompose.from_yaml(text)
    except ValueError as error:
        problem(f"deploy/compose.yaml is not a valid Compose file: {error}")
        return
    compose = yaml.safe_load(text)
    services = compose.get("services", {})
    made_by_script = generated_secrets()

    def must_exist(source, what):
        full = os.path.normpath(os.path.join(DEPLOY, source))
        if not os.path.exists(full):
            problem(f"deploy/compose.yaml: {what} {source} ({relative(full)}) does not exist")
        return full

    # Top-level configs and secrets from files: in the repository, or made by deploy/generate-secrets.
    for kind in ("configs", "secrets"):
        for name, definition in (compose.get(kind) or {}).items():
            source = definition.get("file")
            if source is None:
                problem(f"deploy/compose.yaml: {kind} {name} is not read from a file")
                continue
            full = os.path.normpath(os.path.join(DEPLOY, source))
            if kind == "secrets" and os.path.dirname(full) == os.path.join(DEPLOY, "secrets"):
                if os.path.basename(full) not in made_by_script:
                    problem(f"deploy/compose.yaml: secret {name} ({relative(full)}) is not made by "
                            "deploy/generate-secrets")
            else:
                must_exist(source, f"{kind[:-1]} {name}")

    named_volumes = set((compose.get("volumes") or {}).keys())
    for service_name, service in services.items():
        build = service.get("build")
        if build is not None:
            context = build if isinstance(build, str) else build.get("context", ".")
            must_exist(context, f"the build context of {service_name}")
            dockerfile = "Dockerfile" if isinstance(build, str) else build.get("dockerfile", "Dockerfile")
            must_exist(os.path.join(context, dockerfile), f"the Dockerfile of {service_name}")
        for volume in service.get("volumes", []):
            if isinstance(volume, str):
                source = volume.split(":")[0]
                is_bind = source.startswith((".", "/", "~"))
            else:
                source, is_bind = volume.get("source"), volume.get("type") == "bind"
            if is_bind:
                must_exist(source, f"the bind mount of {service_name}")
            elif source not in named_volumes:
                problem(f"deploy/compose.yaml: {service_name} mounts the volume {source}, which is not declared")
        for kind in ("configs", "secrets"):
            for reference in service.get(kind, []):
                source = reference if isinstance(reference, str) else reference.get("source")
                if source not in (compose.get(kind) or {}):
                    problem(f"deploy/compose.yaml: {service_name} uses {kind[:-1]} {source}, which is not declared")
        for dependency in service.get("depends_on", []):
            if dependency not in services:
                problem(f"deploy/compose.yaml: {service_name} depends on {dependency}, which is not a service")

    # The service against the contract.
    service = services.get("attestkit")
    if service is None:
        problem("deploy/compose.yaml: no service attestkit")
        return
    expect = {
        "image": IMAGE,
        "build": {"context": "..", "dockerfile": "Dockerfile"},
        "command": ["serve", "--config", CONFIG_PATH],
        "user": f"{USER}:{USER}",
        "read_only": True,
    }
    for key, value in expect.items():
        if service.get(key) != value:
            problem(f"deploy/compose.yaml: attestkit's {key} is {service.get(key)!r}, expected {value!r}")
    environment = service.get("environment") or {}
    if environment.get("ATTESTKIT_SECRETS_DIR", SECRETS_DIR) != SECRETS_DIR:
        problem(f"deploy/compose.yaml: ATTESTKIT_SECRETS_DIR is not {SECRETS_DIR}")
    if service.get("depends_on", {}).get("postgres", {}).get("condition") != "service_healthy":
        problem("deploy/compose.yaml: attestkit does not wait for postgres to be healthy")
    if "healthcheck" not in services.get("postgres", {}):
        problem("deploy/compose.yaml: postgres has no health check")
    published = {str(port).rsplit(":", 1)[-1] for port in service.get("ports", [])}
    for port in (PUBLIC_PORT, BACKEND_PORT):
        if str(port) not in published:
            problem(f"deploy/compose.yaml: attestkit does not publish its port {port}")
    config_mounts = [c for c in service.get("configs", []) if isinstance(c, dict) and c.get("target") == CONFIG_PATH]
    if len(config_mounts) != 1:
        problem(f"deploy/compose.yaml: attestkit has no configuration at {CONFIG_PATH}")
        keys = {}
    else:
        source = compose["configs"][config_mounts[0]["source"]]["file"]
        full = os.path.normpath(os.path.join(DEPLOY, source))
        keys = check_configuration(relative(full), open(full).read()) if os.path.exists(full) else {}
    mounted_secrets = set()
    for reference in service.get("secrets", []):
        target = reference.get("target", "") if isinstance(reference, dict) else ""
        if os.path.dirname(target) != SECRETS_DIR or os.path.basename(target) not in SECRET_FILES:
            problem(f"deploy/compose.yaml: attestkit's secret {reference} is not a file of {SECRETS_DIR} named after "
                    f"a secret setting ({', '.join(sorted(SECRET_FILES))})")
        mounted_secrets.add(os.path.basename(target))
    for needed in ("storage-password", "admin-token", "backend-tokens"):
        if needed not in mounted_secrets:
            problem(f"deploy/compose.yaml: attestkit is not given the secret {needed}")
    grace = keys.get("shutdown.grace-period")
    if isinstance(grace, (int, float)) and seconds(service.get("stop_grace_period", "10s")) <= grace:
        problem(f"deploy/compose.yaml: attestkit's stop_grace_period does not exceed shutdown.grace-period ({grace} s)")

    # Prometheus reads the credential compose gives it, scrapes the backend listener and loads the rules it mounts.
    prometheus_service = services.get("prometheus", {})
    prometheus = yaml.safe_load(open(os.path.join(DEPLOY, "prometheus/prometheus.yml")))
    mounts = {v.split(":")[1]: v.split(":")[0] for v in prometheus_service.get("volumes", []) if isinstance(v, str)}
    given = {"/run/secrets/" + (s["target"] if isinstance(s, dict) else s) for s in prometheus_service.get("secrets", [])}
    for job in prometheus.get("scrape_configs", []):
        credential = (job.get("authorization") or {}).get("credentials_file")
        if credential not in given:
            problem(f"deploy/prometheus/prometheus.yml: job {job['job_name']} reads {credential}, which compose does "
                    "not give Prometheus")
        targets = [t for c in job.get("static_configs", []) for t in c.get("targets", [])]
        if targets != [f"attestkit:{BACKEND_PORT}"]:
            problem(f"deploy/prometheus/prometheus.yml: job {job['job_name']} scrapes {targets}, not the backend "
                    f"listener attestkit:{BACKEND_PORT}")
    for rule_file in prometheus.get("rule_files", []):
        if os.path.join("/etc/prometheus", rule_file) not in mounts:
            problem(f"deploy/compose.yaml: Prometheus's rule file {rule_file} is not mounted in /etc/prometheus")

    # Grafana's provider reads the directory the dashboard is mounted in.
    grafana_mounts = {v.split(":")[1]: v.split(":")[0] for v in services.get("grafana", {}).get("volumes", [])}
    provisioning = grafana_mounts.get("/etc/grafana/provisioning")
    if provisioning is None:
        problem("deploy/compose.yaml: Grafana's provisioning directory is not mounted")
        return
    providers_dir = os.path.join(DEPLOY, provisioning, "dashboards")
    for name in sorted(os.listdir(providers_dir)):
        for provider in yaml.safe_load(open(os.path.join(providers_dir, name))).get("providers", []):
            path = provider.get("options", {}).get("path")
            if not any(os.path.dirname(target) == path and source.endswith(".json")
                       for target, source in grafana_mounts.items()):
                problem(f"{relative(providers_dir)}/{name}: provider {provider['name']} reads {path}, where no "
                        "dashboard is mounted")
    datasources_dir = os.path.join(DEPLOY, provisioning, "datasources")
    for name in sorted(os.listdir(datasources_dir)):
        for source in yaml.safe_load(open(os.path.join(datasources_dir, name))).get("datasources", []):
            if source.get("url") != "http://prometheus:9090":
                problem(f"{relative(datasources_dir)}/{name}: {source['name']} is not the stack's Prometheus")
    if len(problems) == before:
        print(f"deploy/compose.yaml: a valid Compose file, {len(services)} services, every file it names exists or is "
              "made by deploy/generate-secrets, attestkit as the container contract says")


def check_kubernetes():
    before = len(problems)
    manifests = sorted(n for n in os.listdir(KUBERNETES) if n.endswith((".yaml", ".yml")))
    kustomization = yaml.safe_load(open(os.path.join(KUBERNETES, "kustomization.yaml")))
    listed = kustomization.get("resources", [])
    for resource in listed:
        if not os.path.exists(os.path.join(KUBERNETES, resource)):
            problem(f"deploy/kubernetes/kustomization.yaml: {resource} does not exist")
    for name in manifests:
        if name != "kustomization.yaml" and name not in listed and name not in NOT_IN_KUSTOMIZATION:
            problem(f"deploy/kubernetes/{name} is not in kustomization.yaml")

    # Strict validation against the Kubernetes schemas (kubernetes-validate bundles them: no network).
    files = [os.path.join(KUBERNETES, n) for n in manifests if n != "kustomization.yaml"]
    result = subprocess.run(["kubernetes-validate", "--strict", "--quiet", *files], capture_output=True, text=True)
    if result.returncode != 0:
        problem("deploy/kubernetes/: not valid against the Kubernetes schemas:\n" + (result.stdout + result.stderr).strip())

    resources = {}
    for path in files:
        for document in yaml.safe_load_all(open(path)):
            if document:
                resources[(document["kind"], document["metadata"]["name"])] = document

    def secret_keys(secret):
        """The files a Secret volume holds: its items' paths, else every key of the Secret (secret.example.yaml)."""
        if "items" in secret:
            return {item["path"] for item in secret["items"]}
        document = resources.get(("Secret", secret.get("secretName")))
        if document is None:
            return None
        return set(document.get("stringData", {})) | set(document.get("data", {}))

    def pod_checks(name, pod, secret_files):
        security = pod.get("securityContext", {})
        if security.get("runAsNonRoot") is not True or security.get("runAsUser") != USER:
            problem(f"{name}: the pod does not run as non-root user {USER}")
        if security.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            problem(f"{name}: the pod's seccomp profile is not RuntimeDefault")
        if pod.get("enableServiceLinks") is not False:
            problem(f"{name}: enableServiceLinks is not false (the Services' ATTESTKIT_SERVICE_HOST, ATTESTKIT_PORT, "
                    "... variables would each be warned of at start as naming no setting)")
        container = pod["containers"][0]
        context = container.get("securityContext", {})
        wanted = {"readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False, "runAsNonRoot": True}
        for key, value in wanted.items():
            if context.get(key) != value:
                problem(f"{name}: the container's {key} is not {value}")
        if context.get("capabilities", {}).get("drop") != ["ALL"]:
            problem(f"{name}: the container does not drop every capability")
        if container.get("image") != IMAGE:
            problem(f"{name}: the image is {container.get('image')}, not {IMAGE}")
        if "--config" not in container.get("args", []) or CONFIG_PATH not in container.get("args", []):
            problem(f"{name}: not started with --config {CONFIG_PATH}")
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        mounted = set()
        for mount in container.get("volumeMounts", []):
            volume = volumes.get(mount["name"], {})
            if mount["mountPath"] == os.path.dirname(CONFIG_PATH):
                config_map = resources.get(("ConfigMap", volume.get("configMap", {}).get("name")))
                if config_map is None or os.path.basename(CONFIG_PATH) not in config_map.get("data", {}):
                    problem(f"{name}: {os.path.dirname(CONFIG_PATH)} is not a ConfigMap holding attestkit.yaml")
            elif mount["mountPath"].startswith(SECRETS_DIR + "/"):
                problem(f"{name}: {mount['mountPath']} is mounted on its own (subPath): mount the Secret as the "
                        f"directory {SECRETS_DIR} (a subPath file never receives the Secret's updates)")
            elif mount["mountPath"] == SECRETS_DIR:
                secret = volume.get("secret", {})
                if not secret or mount.get("subPath") or mount.get("readOnly") is not True:
                    problem(f"{name}: {SECRETS_DIR} is not a Secret volume mounted whole and read-only")
                keys = secret_keys(secret)
                if keys is None:
                    problem(f"{name}: the Secret {secret.get('secretName')} is not in deploy/kubernetes/")
                    continue
                for key in sorted(keys - SETTING_FILES):
                    problem(f"{name}: the Secret {secret.get('secretName')}'s key {key} names no setting (the "
                            "server refuses it at start)")
                mounted |= keys
        for needed in secret_files:
            if needed not in mounted:
                problem(f"{name}: {SECRETS_DIR}/{needed} is not mounted")
        return container

    deployment = resources.get(("Deployment", "attestkit"))
    config_map = resources.get(("ConfigMap", "attestkit-config"))
    if deployment is None or config_map is None:
        problem("deploy/kubernetes/: no Deployment attestkit or ConfigMap attestkit-config")
    else:
        keys = check_configuration("deploy/kubernetes/configmap.yaml", config_map["data"]["attestkit.yaml"])
        if keys.get("storage.migrations") != "verify":
            problem("deploy/kubernetes/configmap.yaml: the replicas do not run storage.migrations=verify")
        spec = deployment["spec"]
        pod = spec["template"]["spec"]
        name = "deploy/kubernetes/deployment.yaml"
        if spec.get("replicas") != 3:
            problem(f"{name}: not three replicas")
        container = pod_checks(name, pod, ["storage-password", "admin-token", "backend-tokens"])
        ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
        if ports != {"http": PUBLIC_PORT, "backend": BACKEND_PORT}:
            problem(f"{name}: the ports are {ports}, not http {PUBLIC_PORT} and backend {BACKEND_PORT}")
        for probe, path in (("livenessProbe", "/health"), ("readinessProbe", "/ready")):
            if container.get(probe, {}).get("httpGet", {}).get("path") != path:
                problem(f"{name}: the {probe} does not get {path}")
        drain, grace = keys.get("shutdown.drain-period"), keys.get("shutdown.grace-period")
        termination = pod.get("terminationGracePeriodSeconds", 30)
        if isinstance(drain, (int, float)) and isinstance(grace, (int, float)):
            # The server refuses to start unless the grace period is at least a second over the drain.
            if not drain + 1 <= grace < termination:
                problem(f"{name}: shutdown.drain-period ({drain}) + 1 <= shutdown.grace-period ({grace}) < "
                        f"terminationGracePeriodSeconds ({termination}) does not hold")
        labels = pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        for kind, resource_name in resources:
            resource = resources[(kind, resource_name)]
            selector = None
            if kind == "Service":
                selector = resource["spec"]["selector"]
                for port in resource["spec"]["ports"]:
                    if port["targetPort"] not in ports:
                        problem(f"deploy/kubernetes/: Service {resource_name} targets the port {port['targetPort']}, "
                                "which the container does not name")
            elif kind == "PodDisruptionBudget":
                selector = resource["spec"]["selector"]["matchLabels"]
            elif kind == "NetworkPolicy":
                selector = resource["spec"]["podSelector"].get("matchLabels", {})
                # The public port from the ingress (from anywhere, or from the sources a rule names); the backend
                # port only from the sources a rule names, never from anywhere.
                rules = resource["spec"].get("ingress", [])
                policy_ports = {p.get("port") for rule in rules for p in rule.get("ports", [])}
                anyone = [rule for rule in rules if not rule.get("from")]
                open_ports = {p.get("port") for rule in anyone for p in rule.get("ports", [])}
                if PUBLIC_PORT not in policy_ports and not any(not rule.get("ports") for rule in rules):
                    problem(f"deploy/kubernetes/: NetworkPolicy {resource_name} does not let the ingress reach the "
                            f"public port {PUBLIC_PORT}")
                if BACKEND_PORT in open_ports or any(not rule.get("ports") for rule in anyone):
                    problem(f"deploy/kubernetes/: NetworkPolicy {resource_name} opens the backend port "
                            f"{BACKEND_PORT} to every source")
            if selector is not None and any(pod_labels.get(k) != v for k, v in selector.items()):
                problem(f"deploy/kubernetes/: {kind} {resource_name} does not select the Deployment's pods {labels}")
        services = {resource["spec"]["ports"][0]["targetPort"] for (kind, _), resource in resources.items()
                    if kind == "Service"}
        if services != {"http", "backend"}:
            problem("deploy/kubernetes/: not one Service for the public and one for the backend listener")
        if not any(kind == "PodDisruptionBudget" for kind, _ in resources):
            problem("deploy/kubernetes/: no PodDisruptionBudget")
        if not any(kind == "NetworkPolicy" for kind, _ in resources):
            problem("deploy/kubernetes/: no NetworkPolicy (every pod of the cluster would reach the backend listener)")
    job = resources.get(("Job", "attestkit-migrate"))
    if job is None:
        problem("deploy/kubernetes/: no Job attestkit-migrate")
    else:
        container = pod_checks("deploy/kubernetes/migrate-job.yaml", job["spec"]["template"]["spec"],
                               ["storage-password"])
        if container.get("args", [None])[0] != "migrate":
            problem("deploy/kubernetes/migrate-job.yaml: does not run attestkit migrate")
    if len(problems) == before:
        print(f"deploy/kubernetes/: {len(resources)} resources valid against the Kubernetes schemas (strict), the "
              "Deployment and the Job as the container contract says, the backend port closed to unnamed sources")


check_compose()
check_kubernetes()
if problems:
    print("\n".join(f"deploy-check: {p}" for p in problems), file=sys.stderr)
    sys.exit(1)
