"""The support staff's admin: one module per part of the domain.

Django's autodiscover imports this package; each module registers its own
ModelAdmins on import.
"""

from relatorios.admin import (  # noqa: F401
    agendamentos,
    clusters,
    entregas,
    jobs,
    ocorrencias,
    tenants,
)
