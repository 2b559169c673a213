"""What the engine reads from its roots: ontology, schemas, policy, plans; each built on first
use and shared by every stage service."""

from __future__ import annotations

from typing import Any

from rdflib import RDFS

from memkg.arbitration import MemoryReader, QuestionBook, RoleDefaults, labels_from
from memkg.arbitration.policy import PolicyFile, load_policy
from memkg.config import EngineConfig
from memkg.errors import InvalidOperation, NotFound
from memkg.events.projection import UserMemory
from memkg.evolution.migration import MigrationError, load_plan
from memkg.evolution.upcast import Upcasters
from memkg.graph.claims import EntityKeys
from memkg.graph.knowledge import Knowledge
from memkg.graph.projection import UserGraph
from memkg.model.keyspec import KeySpec
from memkg.model.source import Sources
from memkg.model.weight import WeightParams
from memkg.once import once
from memkg.ontology import Ontology
from memkg.roots import Roots
from memkg.validate.limits import check_text
from memkg.validate.registry import SchemaRegistry
from memkg.validate.shacl import ShaclChecker
from memkg.validate.validator import Validator


def check_args(**arguments: Any) -> None:
    """Refuse arguments that hold text no store can encode (lone surrogates)."""
    for name, value in arguments.items():
        check_text(value, name)


def check_count(value: object, name: str, low: int, what: str, code: str = "argument.type") -> None:
    """Refuse ``value`` unless it is a whole number from ``low`` (``what``: what it counts);
    ``True`` and ``2.0`` are not counts."""
    if type(value) is not int or value < low:
        raise InvalidOperation(
            f"{name} is a whole number from {low} ({what}), not {value!r:.40}", code=code
        )


class Setup:
    """The configuration and what it points at, parsed once per engine."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config

    @once
    def layers(self) -> Roots:
        """The roots this engine reads schemas, rules and ontology from (``memkg.roots``)."""
        return self.config.layers

    @once
    def ontology(self) -> Ontology:
        return Ontology(self.layers)

    @once
    def registry(self) -> SchemaRegistry:
        return SchemaRegistry(self.layers.schema_dirs())

    @once
    def policy(self) -> PolicyFile:
        """``rules/policy.yaml`` of the last root that has one (``memkg.arbitration.policy``)."""
        found = self.layers.file("rules/policy.yaml")
        return load_policy(found or self.layers.paths[0] / "rules" / "policy.yaml")

    @once
    def sources(self) -> Sources:
        """The sources in force: the built-ins and those the policy declares."""
        return self.policy.in_force()

    @once
    def weights(self) -> WeightParams:
        """``EngineConfig.weights`` with the credibility of every source the roots declare."""
        declared = {name: d.credibility for name, d in self.sources.declared.items()}
        if not declared:
            return self.config.weights
        merged = {**self.config.weights.credibility, **declared}
        return self.config.weights.model_copy(update={"credibility": merged})

    @once
    def validator(self) -> Validator:
        shacl = None
        if self.config.shacl:
            shacl = ShaclChecker(self.ontology.fact_shapes, self.ontology.entity_types,
                                 sources=self.sources.names,
                                 files=self.ontology.fact_shape_files)  # fmt: skip
        return Validator(self.registry, shacl, self.config.limits, self.config.state_valid_for,
                         self.sources)  # fmt: skip

    def forget_texts(self) -> None:
        """Drop the values validation keeps for reuse (``Validator.forget_texts``), if this
        engine built its validator."""
        validator = self.__dict__.get("validator")
        if isinstance(validator, Validator):
            validator.forget_texts()

    @once
    def knowledge(self) -> Knowledge:
        return Knowledge(self.ontology.knowledge)

    @once
    def entity_keys(self) -> EntityKeys:
        """(domain, key) → entity class, for every key whose schema declares one."""
        specs = (self.registry.spec(d, k) for d in self.registry.domains()
                 for k in self.registry.keys(d))  # fmt: skip
        return {(s.domain, s.key): s.entity for s in specs if s is not None and s.entity}

    @once
    def reader(self) -> MemoryReader:
        """The arbitration policy, questions and role defaults under the roots' ``rules/``."""
        rules = self.layers.rule_dirs()
        labels = self.ontology.knowledge.subject_objects(RDFS.label)
        return MemoryReader(
            policy=self.policy,
            questions=QuestionBook.load(rules),
            defaults=RoleDefaults.load(rules, self.registry.spec),
            weights=self.weights,
            labels=labels_from((str(s), str(o), getattr(o, "language", None)) for s, o in labels),
        )

    @once
    def upcasters(self) -> Upcasters:
        """Upcasters of the plans under ``schemas/<domain>/migrations/`` (and applied ones)."""
        return self._plans[0]

    @property
    def plan_problems(self) -> tuple[MigrationError, ...]:
        """The plan files under ``schemas/<domain>/migrations/`` that do not load, or that
        upcast a key version another plan file upcasts too (``Upcasters.of``): no read upcasts
        by them (``rules lint`` names them; running one that does not load says what is
        wrong)."""
        return self._plans[1]

    @once
    def _plans(self) -> tuple[Upcasters, tuple[MigrationError, ...]]:
        # a draft plan with a typo stops only itself: every other read, write and plan goes on
        loaded, refused = [], []
        for folder in self.layers.schema_dirs().values():
            for path in sorted(folder.glob("migrations/*.yaml")):
                try:
                    plan = load_plan(path, self.layers.root_of(path))
                except MigrationError as exc:
                    refused.append(exc)
                    continue
                old = self.registry.group(plan.domain, plan.group, plan.from_version)
                new = self.registry.group(plan.domain, plan.to_group, plan.to_version)
                loaded.append((plan, old, new))
        found, conflicts = Upcasters.of(loaded)  # two plans for one step: neither is read
        return found, (*refused, *conflicts)

    def new_graph(self, user_id: str) -> UserGraph:
        """An empty contextual graph for the user, over the domain knowledge."""
        return UserGraph(UserMemory(user_id), self.knowledge, self.entity_keys)

    def known(self, domain: str | None) -> None:
        """A domain no schema declares is ``domain.unknown`` (a typo read as "nothing held"
        would pass for an answer), as over HTTP and MCP; ``None`` (every domain) is known."""
        registry = self.registry
        if domain is not None and domain not in registry.domains():
            raise NotFound(registry.unknown_key(domain, ""), code="domain.unknown")

    def key_spec(self, domain: str, key: str) -> KeySpec:
        self.known(domain)
        spec = self.registry.spec(domain, key)
        if spec is None:
            raise NotFound(self.registry.unknown_key(domain, key), code="key.unknown")
        return spec
