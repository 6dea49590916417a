"""The "Suporte" group: exactly what support staff need in the admin.

They look at jobs, tenants and clusters and run the jobs' actions (reexecutar, marcar
como falhou, expirar resultado: `operar_relatoriojob`). They never edit a job's
params or result, delete anything, or see users and tokens.

Used by migration 0004 (with the historical models) and by tests and commands
(with the current ones): a test database flush deletes groups and
permissions, and the same function puts them back.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps as apps_globais
from django.contrib.auth.management import create_permissions

GRUPO_SUPORTE = "Suporte"

# (app label, codename). Changing this list needs a migration that calls
# criar_grupo_suporte again, so existing databases follow.
PERMISSOES_DO_SUPORTE = (
    ("relatorios", "view_relatoriojob"),
    ("relatorios", "operar_relatoriojob"),
    ("relatorios", "view_tenant"),
    ("relatorios", "view_cluster"),
)


def criar_grupo_suporte(apps: Any = apps_globais) -> Any:
    """Create or reset the group with exactly PERMISSOES_DO_SUPORTE; returns it."""
    _garantir_permissoes(apps)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    grupo, _ = Group.objects.get_or_create(name=GRUPO_SUPORTE)
    permissoes = []
    for app, codigo in PERMISSOES_DO_SUPORTE:
        permissao = Permission.objects.filter(
            content_type__app_label=app, codename=codigo
        ).first()
        if permissao is None and apps is apps_globais:
            raise LookupError(f"permission {app}.{codigo} does not exist")
        # None only in an older migration, whose historical models predate
        # the permission's model: the migration that added it grants it.
        if permissao is not None:
            permissoes.append(permissao)
    grupo.permissions.set(permissoes)
    return grupo


def _garantir_permissoes(apps: Any) -> None:
    # While migrations run on a fresh database the permissions do not exist
    # yet (post_migrate creates them after the last migration): create this
    # app's now. Historical app configs have no models module, and
    # create_permissions skips those unless told otherwise.
    config = apps.get_app_config("relatorios")
    modulo = getattr(config, "models_module", None)
    config.models_module = modulo or True
    try:
        create_permissions(config, apps=apps, verbosity=0)
    finally:
        config.models_module = modulo
