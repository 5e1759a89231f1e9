"""``caldera validate``: decode, default and validate manifests without a server.

Objects that pass are printed after defaulting (``-o yaml|json|name``) on stdout; every
error goes to stderr as ``file:line (document N) apiVersion kind name`` followed by one line
per broken rule (field path, its line, the rule). Documents of other systems' kinds are
skipped with a warning and do not fail the run; fragments and invalid objects do.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Callable, Optional

from policies.codec import (
    FRAGMENT_ADVICE,
    Decoded,
    DecodeResult,
    DocumentError,
    NotAnObject,
    admit_all,
    decode_paths,
    dump,
)
from policies.errors import CalderaError, FieldError, InvalidConfiguration, NotACalderaKind, ValidationFailed

NAME = "validate"
HELP = "check manifests (files, directories or -) and print them after defaulting, or every error"

EPILOG = """\
Exit status: 0 when every Caldera object is valid, 1 when any document is invalid (bad
YAML, a fragment without apiVersion/kind, an unknown kind or version, a broken rule).
Documents of kinds that belong to other systems (ServiceMonitor, Prometheus rule groups,
batch/v1 Jobs, ...) are reported as "not a Caldera kind, skipped" and do not change the
exit status, as kubectl would never send them to Caldera. A ConfigMap carrying
volcano-scheduler.conf is checked as a scheduler configuration too.

examples:
  caldera validate -f examples/
  caldera validate -f job.yaml -f policy.yaml -o yaml
  cat job.yaml | caldera validate -f -
"""

SCHEDULER_CONF_KEY = "volcano-scheduler.conf"
KUBE_SCHEDULER_KEYS = ("volcano-scheduler-kubeconfig",)


def register(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("-f", "--filename", action="append", required=True, metavar="FILE|DIR|-",
                        help="manifest file, directory (recursively *.yaml/*.yml/*.json) or - for stdin; repeatable")
    parser.add_argument("-o", "--output", choices=["yaml", "json", "name"], default="name",
                        help="print each object after defaulting in this format (default: one line per object)")
    parser.add_argument("-n", "--namespace", default="default",
                        help="namespace given to namespaced objects that name none (default: %(default)s)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print errors only")


def _scheduler_conf_parser() -> Optional[Callable[[str], Any]]:
    """helper module policies.scheduler_conf, when present (imported lazily)."""
    try:
        module = importlib.import_module("policies.scheduler_conf")
    except ImportError:
        return None
    parser = getattr(module, "parse_scheduler_conf", None) or getattr(module, "parse_conf", None)
    return parser if callable(parser) else None


def check_embedded(item: Decoded) -> tuple[list[DocumentError], list[DocumentError]]:
    """Errors and warnings for configurations carried inside a ConfigMap."""
    obj = item.obj
    data = getattr(obj, "data", None)
    if (obj.kind or obj.KIND) != "ConfigMap" or not isinstance(data, dict):
        return [], []
    errors: list[DocumentError] = []
    warnings: list[DocumentError] = []
    ref = f"v1 ConfigMap {obj.ref().split(' ', 1)[1]}"
    if SCHEDULER_CONF_KEY in data:
        parse = _scheduler_conf_parser()
        if parse is not None:
            try:
                conf = parse(str(data[SCHEDULER_CONF_KEY]))
            except (InvalidConfiguration, CalderaError, ValueError) as exc:
                field = FieldError(f"data[{SCHEDULER_CONF_KEY}]", f"not a usable scheduler configuration: {exc}")
                errors.append(DocumentError(item.origin, ValidationFailed(obj.ref(), [field]), ref, item.lines))
            else:  # what Volcano would ignore: accepted, but said (kubectl's "unknown field")
                for note in getattr(conf, "warnings", ()):
                    warnings.append(DocumentError(item.origin, CalderaError(f"data[{SCHEDULER_CONF_KEY}]: {note}"), ref))
    for key in KUBE_SCHEDULER_KEYS:
        if key in data:
            warnings.append(DocumentError(item.origin, NotACalderaKind(
                "kubescheduler.config.k8s.io", "KubeSchedulerConfiguration", [],
                f"data[{key}]"), ref))
    return errors, warnings


def _warning_text(warning: DocumentError) -> str:
    err = warning.error
    if isinstance(err, NotACalderaKind):
        what = f"{err.kind} ({err.api_version or 'no apiVersion'})"
        where = f" in {err.args[0].split(':', 1)[0]}" if str(err.args[0]).startswith("data[") else ""
        return f"warning: {warning.origin}{where}: {what} is not a Caldera kind, skipped"
    return f"warning: {warning.describe()}"


def check_fragment(error: DocumentError) -> DocumentError:
    """A ``data:`` fragment carrying volcano-scheduler.conf: say whether the conf itself is usable."""
    fragment = error.error
    if not isinstance(fragment, NotAnObject) or not isinstance(fragment.data, dict):
        return error
    body = fragment.data.get("data")
    parse = _scheduler_conf_parser()
    if not isinstance(body, dict) or SCHEDULER_CONF_KEY not in body or parse is None:
        return error
    try:
        parse(str(body[SCHEDULER_CONF_KEY]))
    except (CalderaError, ValueError) as exc:
        verdict = f"Its {SCHEDULER_CONF_KEY} is not usable either: {exc}. "
    else:
        verdict = f"Its {SCHEDULER_CONF_KEY} on its own is a valid scheduler configuration. "
    message = str(fragment).replace(FRAGMENT_ADVICE, verdict + FRAGMENT_ADVICE)
    return DocumentError(error.origin, NotAnObject(message, fragment.data), error.ref, error.lines)


def validate(result: DecodeResult, namespace: str) -> DecodeResult:
    """Admit every decoded object and check embedded configurations."""
    admitted = admit_all(result, namespace)
    admitted.errors = [check_fragment(e) for e in admitted.errors]
    for item in admitted.objects:
        errors, warnings = check_embedded(item)
        admitted.errors.extend(errors)
        admitted.warnings.extend(warnings)
    return admitted


def run(args: argparse.Namespace) -> int:
    result = validate(decode_paths(args.filename), args.namespace)
    failed = {e.origin for e in result.errors}
    good = [item.obj for item in result.objects if item.origin not in failed]
    if good and not args.quiet:
        sys.stdout.write(dump(good, args.output))
    for warning in result.warnings:
        print(_warning_text(warning), file=sys.stderr)
    for error in result.errors:
        print(f"error: {error.describe()}", file=sys.stderr)
    total = len({item.origin for item in result.objects} | failed)
    if result.errors:
        print(f"{len(result.errors)} of {total} documents invalid", file=sys.stderr)
        return 1
    if not result.objects and not result.warnings:
        print("error: no objects found in " + ", ".join(args.filename), file=sys.stderr)
        return 1
    return 0
