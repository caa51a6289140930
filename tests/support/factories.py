"""factory-boy factories for the app's rows: the one place that knows how a test user, target,
session or prompt generation is made. The defaults are what most tests want; a test passes what it
is about."""

from __future__ import annotations

import factory
from django.conf import settings
from factory.django import DjangoModelFactory

from sessions_app.models import PermissionPolicyChoice, PromptGeneration, ProviderTarget, Session
from sessions_app.services import session_create


class UserFactory(DjangoModelFactory):
    class Meta:
        model = settings.AUTH_USER_MODEL

    username = factory.Sequence(lambda n: f"user{n}")

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        # create_user hashes a password when one is given. Without one the password is unusable,
        # which costs nothing: hashing takes about half a second per user, and tests log in with
        # force_login or API tokens.
        return model_class._default_manager.create_user(*args, **kwargs)


class ProviderTargetFactory(DjangoModelFactory):
    """The Mock target by default; names are unique, so the same name gives the same row."""

    class Meta:
        model = ProviderTarget
        django_get_or_create = ("name",)

    name = "Mock"
    kind = ProviderTarget.Kind.MOCK
    model = "mock-1"
    # Not the product's default (ask): a test whose agent asks must say who answers, or its turn
    # would wait for a person nobody plays.
    permission_policy = PermissionPolicyChoice.ALLOW_READ_ONLY


class SessionFactory(DjangoModelFactory):
    """Opened through session_create, so the session gets its task as in the product."""

    class Meta:
        model = Session

    owner = factory.SubFactory(UserFactory)
    target = factory.SubFactory(ProviderTargetFactory)
    title = "Plan the week"

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return session_create(**kwargs)


class GenerationFactory(DjangoModelFactory):
    """A prompt generation written directly, in whatever state the test starts from."""

    class Meta:
        model = PromptGeneration

    session = factory.SubFactory(SessionFactory)
    number = factory.LazyAttribute(lambda generation: generation.session.generations.count() + 1)
