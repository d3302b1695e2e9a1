"""The rules each field of the input follows, and how a broken rule is said to a user.

model.py builds apps and nodes with these checks. A check raises FieldError
(the field's path below the item and the problem in words); the caller adds
the list, the index and the name. Values are described in the words of the
input (`a string`, `a list`, `a mapping`, `a number`, `true/false`), never by
Python type names, which for Ansible's own values are internal names such as
`_AnsibleTaggedStr`. Shown values are cut at SHOWN_MAX characters, so that a
huge value cannot flood a message.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from json.encoder import encode_basestring_ascii
from typing import NoReturn, cast

# RFC 1123 label and subdomain, as Kubernetes checks names of Deployments and Nodes.
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS1123_SUBDOMAIN_MAX = 253
# The name part of a label key, and a label value (which may also be empty).
LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
LABEL_NAME_MAX = 63
# What Kubernetes accepts as the name of an environment variable.
ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
# A Kubernetes quantity: a decimal number, then a binary or decimal suffix or
# an exponent. ASCII digits only ('²' and other Unicode digits are not digits here).
QUANTITY = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?")
QUANTITY_TEXT_MAX = 64
# Largest quantity in millis or units: Kubernetes keeps quantities as int64.
QUANTITY_MAX = 2**63 - 1
QUANTITY_DIGITS_MAX = 19
QUANTITY_EXAMPLES = "500m, 2, 512Mi or 1G"
QUANTITY_TOO_LARGE = "more than Kubernetes can hold (2^63 - 1 thousandths of a unit)"
# Digits of a whole number given as text: enough for any bound of the engine.
WHOLE_NUMBER_TEXT_MAX = 18
ASCII_DIGITS = re.compile(r"[0-9]+")
# How deep a free-form value (security_context) may nest, and how many characters of a value a message shows.
NESTING_MAX = 32
SHOWN_MAX = 60
# The boolean words Ansible's `bool` filter accepts, so `-e rebalance=false` means false.
TRUE_WORDS = frozenset({"true", "yes", "on", "1"})
FALSE_WORDS = frozenset({"false", "no", "off", "0"})


class FieldError(Exception):
    """One field of an item is wrong: its path below the item ('resources.requests.cpu') and the problem."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"field '{field}': {problem}")


def missing(field: str) -> NoReturn:
    """Raise the error of a required field that is not there."""
    raise FieldError(field, "missing")


def kind_of(value: object) -> str:
    """What a value is, in the words of YAML and JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float, Decimal)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (bytes, bytearray)):
        return "binary data"
    if isinstance(value, Sequence | set | frozenset):
        return "a list"
    return "a value that is not a string, number, true/false, list or mapping"


def shown(value: object) -> str:
    """A value as a message shows it: strings quoted (a trailing newline shows as \\n), cut at SHOWN_MAX."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        text = repr(str(value)[: SHOWN_MAX + 1])
    elif isinstance(value, int):
        digits = int(value.bit_length() * math.log10(2)) + 1
        text = str(int(value)) if digits < SHOWN_MAX else f"a number of about {digits:,} digits"
    elif isinstance(value, float):
        text = repr(float(value))
    else:
        return kind_of(value)
    return text if len(text) <= SHOWN_MAX else text[:SHOWN_MAX] + "..."


def got(value: object) -> str:
    """`got 'x'` for a scalar, `got a list` for anything else."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return f"got {shown(value)}"
    return f"got {kind_of(value)}"


def join_path(parent: str, key: object) -> str:
    """The path of a key below `parent` ('env' + 'HOME' -> 'env.HOME'); odd keys are shown quoted."""
    text = key if isinstance(key, str) and key.isprintable() and len(key) <= SHOWN_MAX else shown(key)
    return f"{parent}.{text}" if parent else str(text)


def unknown_key_problem(key: object, known: Sequence[str]) -> str:
    """'unknown field; did you mean ...? (valid fields: ...)' for a key that is not one of `known`."""
    problem = "unknown field"
    if isinstance(key, str):
        close = difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.6)
        if close:
            problem += f"; did you mean '{close[0]}'?"
    return f"{problem} (valid fields: {', '.join(known)})"


def check_known_keys(item: Mapping[object, object], known: Sequence[str], parent: str = "") -> None:
    """Every key of `item` must be one of `known`; the error suggests the closest known key."""
    for key in item:
        if not (isinstance(key, str) and key in known):
            raise FieldError(join_path(parent, key), unknown_key_problem(key, known))


def mapping(value: object, field: str, what: str) -> Mapping[object, object]:
    """`value` as a mapping (null is an empty one); `what` says what it maps, for the error."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise FieldError(field, f"must be a mapping of {what}, {got(value)}")
    return value


def string_list(value: object, field: str) -> None:
    """A list of strings (null or an empty list are fine)."""
    if value is None:
        return
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise FieldError(field, f"must be a list of strings, {got(value)}")
    for position, element in enumerate(value):
        if not isinstance(element, str):
            raise FieldError(f"{field}[{position}]", f"must be a string, {got(element)}")


def choice(value: object, field: str, choices: Iterable[str]) -> str:
    """One of `choices`, any case, returned in lower case."""
    options = tuple(choices)
    if isinstance(value, str) and value.lower() in options:
        return value.lower()
    raise FieldError(field, f"unknown {field.rsplit('.', 1)[-1]} {shown(value)}: expected one of {', '.join(options)}")


def _fits(value: object, pattern: re.Pattern[str], maximum: int) -> bool:
    """True when value is text of at most `maximum` characters that `pattern` matches whole."""
    return isinstance(value, str) and len(value) <= maximum and pattern.fullmatch(value) is not None


def _matching(value: object, field: str, pattern: re.Pattern[str], maximum: int, rule: str) -> str:
    """`value` when `_fits`, else a FieldError saying '<value> is not <rule>'."""
    if _fits(value, pattern, maximum):
        return str(value)
    raise FieldError(field, f"{shown(value)} is not {rule}")


def dns_label(value: object, field: str) -> str:
    """A DNS-1123 label (the name of a Deployment or a container)."""
    return _matching(
        value, field, DNS1123_LABEL, DNS1123_LABEL_MAX,
        "a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit, "
        f"at most {DNS1123_LABEL_MAX} characters)",
    )


def dns_subdomain(value: object, field: str) -> str:
    """A DNS-1123 subdomain (the name of a Node)."""
    return _matching(
        value, field, DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_MAX,
        f"a node name (a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', at most "
        f"{DNS1123_SUBDOMAIN_MAX} characters)",
    )


def label_key(key: object, field: str) -> str:
    """A label key: an optional DNS subdomain and '/', then a name of at most 63 characters."""
    if isinstance(key, str):
        prefix, slash, name = key.rpartition("/")
        if (not slash or _fits(prefix, DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_MAX)) and _fits(
            name, LABEL_NAME, LABEL_NAME_MAX
        ):
            return key
    raise FieldError(
        field,
        f"{shown(key)} is not a label key (an optional DNS subdomain prefix and '/', then at most "
        f"{LABEL_NAME_MAX} letters, digits, '-', '_' or '.', starting and ending with a letter or digit)",
    )


def label_value(value: object, field: str) -> str:
    """A label value: empty, or at most 63 letters, digits, '-', '_', '.'; a whole number is taken as its digits."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**LABEL_NAME_MAX:
        return str(int(value))
    if value == "" or _fits(value, LABEL_NAME, LABEL_NAME_MAX):
        return str(value)
    hint = " (quote it to mean the text)" if isinstance(value, (bool, float)) or value is None else ""
    raise FieldError(
        field,
        f"{shown(value) if not isinstance(value, (Mapping, list, tuple)) else kind_of(value)} is not a label value "
        f"(empty, or at most {LABEL_NAME_MAX} letters, digits, '-', '_' or '.', starting and ending with a letter "
        f"or digit){hint}",
    )


def labels(value: object, field: str) -> dict[str, str]:
    """A mapping of label key to label value, as plain strings."""
    result = {}
    for key, raw in mapping(value, field, "label to value").items():
        path = join_path(field, key)
        result[label_key(key, path)] = label_value(raw, path)
    return result


def whole_number(value: object, field: str, minimum: int, maximum: int) -> int:
    """A whole number from `minimum` to `maximum`: an int, a float with no fraction, or ASCII digits.

    true/false is not a number, and '²' is not a digit, though Python's
    str.isdigit says it is.
    """
    whole = (
        (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and value.is_integer())
        or (isinstance(value, str) and len(value) <= WHOLE_NUMBER_TEXT_MAX and ASCII_DIGITS.fullmatch(value))
    )
    number = int(value) if whole else None  # type: ignore[call-overload]  # whole: an int, a float or digits
    if number is None or not minimum <= number <= maximum:
        raise FieldError(field, f"must be a whole number from {minimum:,} to {maximum:,}, {got(value)}")
    return number


def quantity(value: object) -> Decimal:
    """A Kubernetes quantity (`500m`, `2`, `512Mi`, `1e3`) as a Decimal, at least 0, of any size (`1e400`).

    Raises TypeError for a value that is not text or a number, ValueError for
    text that is no quantity; the message says what is wrong without
    repeating the value. bounded_quantity also refuses what Kubernetes cannot
    hold; a caller of this one checks the size before rounding.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"give text such as {QUANTITY_EXAMPLES}, or a number, not {kind_of(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("not a finite number")
    if isinstance(value, str) and (len(value) > QUANTITY_TEXT_MAX or not QUANTITY.fullmatch(value)):
        raise ValueError(f"expected a number and an optional suffix, such as {QUANTITY_EXAMPLES}")
    from kubernetes.utils.quantity import parse_quantity

    parsed = Decimal(parse_quantity(str(value) if isinstance(value, str) else value))
    if parsed < 0:
        raise ValueError("must not be negative")
    return parsed


def bounded_quantity(value: object) -> Decimal:
    """quantity(), and at most QUANTITY_MAX thousandths: what Kubernetes can hold, and safe to round."""
    parsed = quantity(value)
    # By its exponent first: 1e999999999 must not be multiplied out (Decimal overflow) or expanded into digits.
    if parsed and (parsed.adjusted() > QUANTITY_DIGITS_MAX or parsed * 1000 > QUANTITY_MAX):
        raise ValueError(QUANTITY_TOO_LARGE)
    return parsed


def flag(value: object, field: str) -> bool:
    """true/false, also as the words Ansible's `bool` filter takes (`-e rebalance=false` is false)."""
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS | FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    raise FieldError(field, f"must be true or false, {got(value)}")


def json_size(value: object, field: str, limit: int, depth: int = 0) -> int:
    """Bytes of `value` as json.dumps writes it, checking that it is plain JSON data; stops past `limit`.

    Returns a number above `limit` as soon as the value is known to be that
    big, so a list of a thousand aliases of one long string (YAML anchors) is
    not serialised a thousand times to find out. An error names the field
    below `field` where the value is not plain data.
    """
    return _json_size(value, field, limit, depth)


def _field(path: object) -> str:
    """The field name of a path as _json_size passes it down: a string, or (parent path, key or list position)."""
    if isinstance(path, str):
        return path
    parent, step = cast("tuple[object, object]", path)  # a pair below the top
    return f"{_field(parent)}[{step}]" if isinstance(step, int) else join_path(_field(parent), step)


def _json_size(value: object, path: object, limit: int, depth: int) -> int:
    # Every app item of every run goes through here (10,000 apps: a third of their validation before this
    # was written so), so the field's name is put together only for an error, strings are measured by
    # json's own encoder without its wrappers, and the usual types are asked first.
    if depth > NESTING_MAX:
        raise FieldError(_field(path), f"nested deeper than {NESTING_MAX} levels")
    if isinstance(value, str):
        if len(value) > limit:
            return len(value) + 2
        return len(encode_basestring_ascii(value))  # what json.dumps writes for a string (ensure_ascii)
    if isinstance(value, Mapping):
        total, separator = 2, 0
        for key, element in value.items():
            if not isinstance(key, str):
                raise FieldError(join_path(_field(path), key), f"keys must be strings, got {shown(key)}")
            # '{"key": value, "key": value}' as json.dumps (and Ansible's to_json) writes it.
            total += separator + len(encode_basestring_ascii(key)) + 2 + _json_size(
                element, (path, key), limit - total, depth + 1
            )
            if total > limit:
                return total
            separator = 2
        return total
    if value is None or isinstance(value, bool):
        return 5 if value is False else 4  # null, true, false
    if isinstance(value, int):
        if abs(value) > QUANTITY_MAX:
            raise FieldError(_field(path), f"{shown(value)} is too large a number")
        return len(str(int(value)))
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FieldError(_field(path), f"{shown(value)} is not a finite number")
        return len(repr(float(value)))
    if isinstance(value, (list, tuple)):
        total, separator = 2, 0
        for position, element in enumerate(value):
            total += separator + _json_size(element, (path, position), limit - total, depth + 1)
            if total > limit:
                return total
            separator = 2
        return total
    raise FieldError(_field(path), f"must be plain data (strings, numbers, true/false, lists, mappings), {got(value)}")


# Taints and tolerations, as Kubernetes writes and checks them (core/v1 Taint and Toleration).
TAINT_EFFECTS: tuple[str, ...] = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# The effects that keep a pod off a node (PreferNoSchedule only discourages it, as kube-scheduler scores it).
BLOCKING_EFFECTS: tuple[str, ...] = ("NoSchedule", "NoExecute")
TOLERATION_OPERATORS: tuple[str, ...] = ("Exists", "Equal")
TOLERATION_FIELDS: tuple[str, ...] = ("key", "operator", "value", "effect", "tolerationSeconds")
TAINT_FIELDS: tuple[str, ...] = ("key", "value", "effect")
TOLERATIONS_MAX = 64
TAINTS_MAX = 256
# (key, operator, value, effect): '' for a key or an effect that is not given (any key, any effect).
Toleration = tuple[str, str, str, str]
# (key, value, effect)
Taint = tuple[str, str, str]


def _exact(value: object, field: str, options: Sequence[str]) -> str:
    """One of `options`, spelt exactly as Kubernetes does (it compares them case-sensitively)."""
    if isinstance(value, str) and value in options:
        return value
    close = [option for option in options if isinstance(value, str) and option.lower() == value.lower()]
    hint = f" (Kubernetes spells it {close[0]!r})" if close else ""
    raise FieldError(field, f"{shown(value)} is not one of {', '.join(options)}{hint}")


def toleration(value: object, field: str) -> Toleration:
    """One pod toleration, checked as the API server checks it; returned as (key, operator, value, effect)."""
    item = mapping(value, field, "toleration field to value (key, operator, value, effect, tolerationSeconds)")
    if not item:
        raise FieldError(field, "must be a mapping with at least `operator: Exists` or a `key`")
    check_known_keys(item, TOLERATION_FIELDS, field)
    key = "" if item.get("key") in (None, "") else label_key(item["key"], f"{field}.key")
    operator = "Equal" if item.get("operator") in (None, "") else _exact(
        item["operator"], f"{field}.operator", TOLERATION_OPERATORS
    )
    raw_value = item.get("value")
    text = "" if raw_value in (None, "") else label_value(raw_value, f"{field}.value")
    if operator == "Exists" and text:
        raise FieldError(f"{field}.value", "must be empty when `operator` is Exists (Exists matches any value)")
    if not key and operator != "Exists":
        raise FieldError(f"{field}.operator", "must be Exists when `key` is empty (an empty key matches every taint)")
    effect = "" if item.get("effect") in (None, "") else _exact(item["effect"], f"{field}.effect", TAINT_EFFECTS)
    if item.get("tolerationSeconds") is not None:
        seconds = item["tolerationSeconds"]
        if isinstance(seconds, str):
            raise FieldError(f"{field}.tolerationSeconds", f"must be a whole number of seconds, {got(seconds)}")
        whole_number(seconds, f"{field}.tolerationSeconds", -(2**63), 2**63 - 1)
        if effect != "NoExecute":
            raise FieldError(f"{field}.tolerationSeconds", "is only allowed with `effect: NoExecute`")
    return key, operator, text, effect


def tolerations(value: object, field: str) -> tuple[Toleration, ...]:
    """A list of pod tolerations (null or empty: none), at most TOLERATIONS_MAX."""
    if value is None:
        return ()
    if isinstance(value, (str, Mapping)) or not isinstance(value, (list, tuple)):
        raise FieldError(field, f"must be a list of tolerations, {got(value)}")
    if len(value) > TOLERATIONS_MAX:
        raise FieldError(field, f"{len(value):,} tolerations, more than the {TOLERATIONS_MAX} one app may have")
    return tuple(toleration(element, f"{field}[{position}]") for position, element in enumerate(value))


def taints(value: object, field: str) -> tuple[Taint, ...]:
    """A node's taints (null or empty: none), each (key, value, effect), at most TAINTS_MAX."""
    if value is None:
        return ()
    if isinstance(value, (str, Mapping)) or not isinstance(value, (list, tuple)):
        raise FieldError(field, f"must be a list of taints, {got(value)}")
    if len(value) > TAINTS_MAX:
        raise FieldError(field, f"{len(value):,} taints, more than the {TAINTS_MAX} a node may have here")
    result = []
    for position, element in enumerate(value):
        path = f"{field}[{position}]"
        item = mapping(element, path, "taint field to value (key, value, effect)")
        check_known_keys(item, TAINT_FIELDS, path)
        key = label_key(item.get("key") or missing(f"{path}.key"), f"{path}.key")
        text = "" if item.get("value") in (None, "") else label_value(item["value"], f"{path}.value")
        effect = _exact(item.get("effect") or missing(f"{path}.effect"), f"{path}.effect", TAINT_EFFECTS)
        result.append((key, text, effect))
    return tuple(result)


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether the toleration tolerates the taint, as Kubernetes decides (core/v1 Toleration.ToleratesTaint)."""
    key, operator, value, effect = toleration
    taint_key, taint_value, taint_effect = taint
    if effect and effect != taint_effect:
        return False
    if key and key != taint_key:
        return False
    return operator == "Exists" or value == taint_value


def untolerated(tolerations_of_app: Sequence[Toleration], node_taints: Sequence[Taint]) -> Taint | None:
    """The first NoSchedule or NoExecute taint of a node that none of the tolerations tolerates, or None."""
    for taint in node_taints:
        if taint[2] in BLOCKING_EFFECTS and not any(tolerates(t, taint) for t in tolerations_of_app):
            return taint
    return None
