"""The "Suporte" group: exactly what support staff need in the admin.

They look at jobs, tenants and clusters and run the jobs' actions (reexecutar, marcar
como falhou, expirar resultado: `operar_relatoriojob`). They look after the
schedules (create, pause, resume, run now, delete: `add_`/`change_agendamento`;
schedules are never edited field by field), their occurrences and alerts, and
close alerts with a note (`fechar_alerta`), see the webhooks and the
deliveries and resend one (`reenviar_entrega`), set a tenant's allowed
email domains (`definir_dominios_email`), and read the operations
dashboard (`ver_painel`). They never edit a job's params or
result, delete anything, or see users and tokens.

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
    ("relatorios", "view_agendamento"),
    ("relatorios", "add_agendamento"),
    # Pausing, resuming, "executar agora" and the soft delete; no field edits.
    ("relatorios", "change_agendamento"),
    ("relatorios", "view_ocorrencia"),
    ("relatorios", "view_alerta"),
    ("relatorios", "fechar_alerta"),
    # Which clusters are alive (read-only list).
    ("relatorios", "view_cluster"),
    # The tenants' webhooks and the notification outbox; resend a delivery.
    ("relatorios", "view_webhook"),
    ("relatorios", "view_entrega"),
    ("relatorios", "reenviar_entrega"),
    # A tenant's allowed email domains: the one field of a tenant they change.
    ("relatorios", "definir_dominios_email"),
    # The operations dashboard (/admin/painel/): reads only.
    ("relatorios", "ver_painel"),
)


def criar_grupo_suporte(
    apps: Any = apps_globais,
    permissoes: tuple[tuple[str, str], ...] = PERMISSOES_DO_SUPORTE,
) -> Any:
    """Create or reset the group with exactly `permissoes`; returns it.

    Migrations pass their own frozen list: an older migration runs on models
    of its time, where the newer permissions do not exist yet.
    """
    _garantir_permissoes(apps)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    grupo, _ = Group.objects.get_or_create(name=GRUPO_SUPORTE)
    grupo.permissions.set(
        [
            Permission.objects.get(content_type__app_label=app, codename=codigo)
            for app, codigo in permissoes
        ]
    )
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
