"""``memkg init DIR --domain NAME``: a new root with one domain that lints and tests clean.

The domain has one key group (an entity key and a number), its entities and SHACL shape, the
domain file (actions, request context), one decision table with its cases, and the
clarification questions. Every file is the smallest complete example of its format
(``docs/authoring.md`` documents them all).

>>> sorted(files_for("pets"))[:3]
['ontology/domains/pets.ttl', 'ontology/shapes/pets.ttl', 'rules/pets/domain.yaml']
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from memkg.errors import ConfigError
from memkg.roots import DOMAIN_NAME, check_links

NAME = DOMAIN_NAME
"""A domain name: what an observation's ``domain`` may be."""
RESERVED = frozenset({"rules", "migrations"})
_ENTITY_PREFIX = re.compile(r"[a-z][a-z_]{0,26}")
"""A name whose ``<name>_item`` is an entity type (``model.vocab.ENTITY_REF``)."""


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _schema(name: str) -> str:
    entity = f"{_camel(name)}Item"
    doc = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://memkg.dev/schemas/{name}/profile@1.json",
        "title": f"{name} / profile",
        "description": f"What a user likes in {name}: one key group, version 1.",
        "x-memkg": {"domain": name, "group": "profile", "version": 1},
        "type": "object",
        "properties": {
            f"{name}.favorite": {
                "title": "The item the user likes best",
                "type": "string",
                "pattern": f"^{name}_item:[a-z0-9_]+$",
                "x-memkg": {"kind": "preference", "sensitivity": "public", "entity": entity},
            },
            f"{name}.budget": {
                "title": "What the user means to spend, in their currency",
                "type": "number",
                "minimum": 0,
                "x-memkg": {"kind": "preference", "sensitivity": "restricted", "consent": True},
            },
        },
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def files_for(name: str) -> dict[str, str]:
    """Relative path → text of every file of a new domain called ``name``."""
    entity, item = f"{_camel(name)}Item", f"{name}_item"
    return {
        f"schemas/{name}/profile@1.json": _schema(name),
        f"ontology/domains/{name}.ttl": f"""\
@prefix mk: <https://memkg.dev/ns#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix {item}: <https://memkg.dev/entity/{item}/> .

# The things {name} keys name: a class, and every entity a value may name.
mk:{entity} a owl:Class ; rdfs:label "{name} item"@en .

{item}:basic a mk:{entity} ; rdfs:label "Basic"@en .
{item}:deluxe a mk:{entity} ; rdfs:label "Deluxe"@en .
""",
        f"ontology/shapes/{name}.ttl": f"""\
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix mk: <https://memkg.dev/ns#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix shape: <https://memkg.dev/shape/> .
@prefix key: <https://memkg.dev/key/> .

# A {name}.favorite fact must name a known {entity} (ontology/domains/{name}.ttl).
shape:{name} owl:versionInfo "1" .

shape:{_camel(name)}FavoriteShape a sh:NodeShape ;
    sh:targetSubjectsOf key:{name}.favorite ;
    sh:property [ sh:path key:{name}.favorite ; sh:class mk:{entity} ;
                  sh:message "{name}.favorite must name a known {entity}" ] .
""",
        f"rules/{name}/domain.yaml": f"""\
description: What to suggest in {name}.
default_decision: suggestion
actions:
  suggest_item:
    description: Suggest an item to the user
    parameters:
      item: {{type: string}}
  ask_preference:
    description: Ask the user what they like
context:
  occasion: {{type: string, enum: [everyday, gift]}}
""",
        f"rules/{name}/suggestion.yaml": f"""\
description: What to suggest; the first matching rule wins.
owner: {name}-team
version: 1
hit_policy: first
default:
  then: {{action: ask_preference, urgency: low}}
  reason_code: NOTHING_KNOWN
  explain: "Nothing on record yet: ask"
rules:
  - id: {name}.favorite_known
    description: A user with a known favourite is offered the deluxe item.
    when:
      - fact: {{key: {name}.favorite, in: ["{item}:basic", "{item}:deluxe"]}}
    then: {{action: suggest_item, urgency: normal, parameters: {{item: {item}:deluxe}}}}
    reason_code: FAVORITE_KNOWN
    explain: "Likes {{{name}.favorite}}: offer the deluxe one"
""",
        f"rules/{name}/suggestion.cases.yaml": f"""\
cases:
  - name: a known favourite is suggested
    now: "2026-05-01T09:00:00Z"
    facts:
      - {{key: {name}.favorite, value: "{item}:basic", source: dialogue, confidence: 0.9}}
    context: {{occasion: everyday}}
    expect:
      action: suggest_item
      rules: [{name}.favorite_known]

  - name: with nothing on record, ask
    now: "2026-05-01T09:00:00Z"
    facts: []
    expect:
      action: ask_preference
      why_not: {{{name}.favorite_known: 0}}
""",
        f"rules/{name}/questions.yaml": f"""\
{name}.favorite:
  conflict:
    en: "Do you prefer {{value}} or {{other}}?"
  stale:
    en: "Is {{value}} still your favourite?"
""",
    }


def init_root(folder: Path, domain: str) -> list[str]:
    """Write a new domain into ``folder`` (created if need be); the files written.

    Refuses a bad name and never overwrites: a domain that exists there already is an error,
    as are a path that is a file (or lies under one) and a file the system will not write,
    each a ``ConfigError`` (the CLI prints it as JSON).
    """
    if not NAME.fullmatch(domain) or domain in RESERVED:
        raise ConfigError(
            f"{domain!r} is not a domain name: use lower-case letters, digits and _ "
            f"(starting with a letter, at most 32), not {', '.join(sorted(RESERVED))}",
            code="init.name",
        )
    if not _ENTITY_PREFIX.fullmatch(domain):
        raise ConfigError(
            f"{domain!r} makes no entity type: a domain init starts names its entities "
            f"{domain}_item:<name>, and an entity type is lower-case letters and _ (no digits), "
            "at most 32 with _item: name it in letters, at most 27 (e.g. "
            f"{re.sub('[0-9]', '', domain)[:27] or 'shop'}), or write the domain by hand",
            code="init.name",
        )
    file = _file_in_the_way(folder)
    if file is not None:
        raise ConfigError(
            f"{folder}: not a folder ({file} is a file): give the folder to start the domain "
            "in (it is created if need be), then use it with --root",
            code="init.not_folder",
        )
    for part in ("schemas", "rules", "ontology"):  # what it writes into, as a root is read:
        check_links(folder / part, folder)  # never through a link that leads out of ``folder``
    files = files_for(domain)
    taken = [rel for rel in files if os.path.lexists(folder / rel)]
    taken += [d for d in (f"schemas/{domain}", f"rules/{domain}")
              if os.path.lexists(folder / d)]  # fmt: skip
    if taken:
        raise ConfigError(
            f"{folder}: domain {domain!r} exists there already ({sorted(set(taken))[0]}); "
            "choose another name or folder",
            code="init.exists",
        )
    written: list[str] = []
    for rel, text in sorted(files.items()):
        try:
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            with (folder / rel).open("x", encoding="utf-8") as out:  # never through a link
                out.write(text)
        except OSError as exc:
            done = f" ({', '.join(written)} written before it: remove them to start again)"
            done = done if written else ""
            raise ConfigError(
                f"{folder}: cannot write {rel}: {exc.strerror or exc}{done}", code="init.write"
            ) from exc
        written.append(rel)
    return sorted(files)


def _file_in_the_way(folder: Path) -> Path | None:
    """The first of ``folder`` and its parents that exists, when it is not a folder."""
    for path in (folder, *folder.parents):
        if path.exists():
            return None if path.is_dir() else path
    return None
