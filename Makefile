# Two commands for a newcomer: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/relatorios
export DATABASE_URL
# With DEBUG off the web, the cluster and manage.py's checks refuse the
# settings' built-in key (config/arranque.py). `make` is for development and
# CI: it sets its own, clearly not a secret. A deployment sets a real one.
DJANGO_SECRET_KEY ?= relatorios-make-dev-key-not-for-deployment-5f0c2a9e81d34b7a
export DJANGO_SECRET_KEY

.PHONY: install run test lint format db demo clean bench caos

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.instalado: requirements.txt | $(BIN)/python
	$(BIN)/pip install --disable-pip-version-check -q -r requirements.txt
	touch $@

install: $(VENV)/.instalado

db: install
	$(BIN)/python manage.py criar_banco
	$(BIN)/python manage.py migrate --noinput

demo: db
	$(BIN)/python manage.py preparar_demo

# Readable key=value logs in a terminal; production's default is JSON lines.
# Procfile.dev is Procfile plus the proxy production puts in front
# (deploy/nginx/relatorios.conf via config/proxy.py): the browser's origin
# http://127.0.0.1:8000, the pages from the web server behind it, the event
# streams from the events process.
# The links in the demo's emails point at the local origin, and the web
# believes the X-Forwarded-For of its own proxy (127.0.0.1), as production
# does of its nginx.
run: demo
	$(BIN)/python manage.py collectstatic --noinput -v 0
	LOG_FORMAT=$${LOG_FORMAT:-texto} \
	RELATORIOS_URL_BASE=$${RELATORIOS_URL_BASE:-http://127.0.0.1:8000} \
	RELATORIOS_PROXIES_CONFIAVEIS=$${RELATORIOS_PROXIES_CONFIAVEIS:-127.0.0.1/32} \
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/honcho start -f Procfile.dev

test: install
	bash .ci/dependencias-do-sistema
	$(BIN)/pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	$(BIN)/lint-imports
	$(BIN)/python manage.py makemigrations --check --dry-run

# The benchmark (docs/benchmarks.md): its own database, the web server, qcluster and
# wrk; one line per figure. `make bench B=B1,B2` runs a subset, QUICK=1 a smoke
# test, PEER=0 skips the seed peer (../shared/peers/express-seed) in B1,
# BENCH_ARGS passes more flags (python -m bench --help).
bench: install
	$(BIN)/python -m bench $(if $(B),--only $(B)) $(if $(QUICK),--quick) \
		$(if $(filter 0,$(PEER)),--no-peer) $(BENCH_ARGS)

# The soak (docs/caos.md): its own deployment (a private PostgreSQL primary and
# streaming replica, 2 web servers, 3 qclusters, SMTP and webhook receivers),
# mixed load, a fault injector whose plan comes from SEMENTE (default: the
# clock's, printed), and invariants checked at the end, each 0 when it held.
# `make caos DURACAO=60s SEMENTE=16176` is the CI form; CAOS_ARGS passes more
# flags (python -m tests.caos --help).
DURACAO ?= 10m
caos: install
	$(BIN)/python -m tests.caos --duracao $(DURACAO) $(if $(SEMENTE),--semente $(SEMENTE)) \
		$(CAOS_ARGS)

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) staticfiles .pytest_cache .mypy_cache .ruff_cache bench-output caos-output

# The chart library the job page draws with, vendored into the static files
# (no CDN): `make vendor-chartjs CHARTJS=4.6.1` fetches that release from the
# npm registry and replaces relatorios/static/relatorios/vendor/chartjs/
# (the minified UMD build without its source map line, its licence, and
# VERSION with the file's sha256,
# which tests/paginas/test_grafico.py checks). Commit the result.
CHARTJS ?= 4.6.1
VENDOR_CHARTJS := relatorios/static/relatorios/vendor/chartjs
.PHONY: vendor-chartjs
vendor-chartjs:
	rm -rf .vendor-tmp && mkdir .vendor-tmp
	cd .vendor-tmp && npm pack --silent chart.js@$(CHARTJS) && tar xzf chart.js-$(CHARTJS).tgz
	mkdir -p $(VENDOR_CHARTJS)
	cp .vendor-tmp/package/LICENSE.md $(VENDOR_CHARTJS)/
	# Without its source map: collectstatic's manifest would require the map.
	grep -v '^//# sourceMappingURL=' .vendor-tmp/package/dist/chart.umd.min.js \
		> $(VENDOR_CHARTJS)/chart.umd.min.js
	printf 'chart.js %s\nsha256 %s\n' "$(CHARTJS)" \
		"$$(sha256sum $(VENDOR_CHARTJS)/chart.umd.min.js | cut -d' ' -f1)" > $(VENDOR_CHARTJS)/VERSION
	rm -rf .vendor-tmp

# Grafana's dashboard schema (@grafana/schema on npm, Node from Debian): the
# dashboard's JSON must satisfy its TypeScript types (deploy/grafana/esquema/).
.PHONY: grafana-esquema
grafana-esquema:
	cd deploy/grafana/esquema && npm ci --silent --no-audit --no-fund \
		&& python3 verificar.py && npx tsc -p .
