# chatd: `make run` serves on the embedded default; `make test` runs everything.
GO        ?= go
STATICCHECK = $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
DATA_DIR  ?= ./data
LISTEN    ?= 127.0.0.1:8080
# FUZZTIME is a count of executions, not a duration: with a duration, Go's fuzz
# coordinator can report "context deadline exceeded" as a failure when the time
# runs out while a worker is mid-input on a loaded box (golang/go#75804, fixed
# only from go1.27), which failed CI once with no crasher written.
FUZZTIME  ?= 50000x
# FUZZMINTIME bounds the minimization of each new input (Go's default is 60 s
# per input, during which no other input runs: CI saw 45 s stalls), also as a
# count for the same reason.
FUZZMINTIME ?= 2000x

.PHONY: run build test test-web lint lint-openapi check-prism deps deps-web fuzz bench clean cluster cluster-down check-deploy

## deps: install what chatd and its tests need (PostgreSQL's server binaries)
deps:
	@scripts/ensure-postgres.sh

## build: compile chatd and chatload into ./bin. -buildvcs=auto stamps the git
## revision that `chatd --version` prints, even where GOFLAGS turns it off.
build:
	$(GO) build -buildvcs=auto -o bin/chatd ./cmd/chatd
	@if [ -d cmd/chatload ]; then $(GO) build -o bin/chatload ./cmd/chatload; fi

## run: start chatd with embedded NATS and a managed PostgreSQL under $(DATA_DIR),
## with the development login on so the demo at / signs in by name
run: deps build
	@echo "chatd: http://$(LISTEN)  (ready when /readyz answers 200)"
	@echo "demo:  http://$(LISTEN)/  (sign in with any name: --dev-login, development only)"
	@echo "token: ./bin/chatd token alice --data-dir $(DATA_DIR)  (ops is an admin: docs/operations.md)"
	./bin/chatd --listen $(LISTEN) --data-dir $(DATA_DIR) --dev-login --admin-users ops

## cluster: three nats-server, one PostgreSQL and three chatd as local processes (docs/cluster.md)
cluster: deps build
	@scripts/cluster.sh up

## cluster-down: stop what `make cluster` started (keeps ./cluster-data)
cluster-down:
	@scripts/cluster.sh down

## lint: gofmt, go vet, staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

## lint-openapi: lint the REST document with Redocly CLI (pinned in
## scripts/openapi/lint; rules in redocly.yaml), a validator independent of
## the kin-openapi checks in the Go tests (Node and npm come with deps-web)
REDOCLY = scripts/openapi/lint/node_modules/.bin/redocly
lint-openapi: deps-web
	@scripts/ensure-openapi-lint.sh
	REDOCLY_SUPPRESS_UPDATE_NOTICE=true $(REDOCLY) lint --config redocly.yaml pkg/api/openapi.yaml

## check-prism: Stoplight Prism (pinned in scripts/openapi/prism) as a validating
## proxy before a real chatd: each call of scripts/prism-check.sh must be answered
## as pkg/api/openapi.yaml says (an outside check of the document, beside kin-openapi's)
check-prism: deps-web build
	@scripts/prism-check.sh

## test: lint, the deploy/ checks, then every test with the race detector, a short
## fuzz run, and the web tests (SDK against a real chatd, the demo in headless Chromium);
## each step says when it starts, every minute while it runs, and how long it took
test:
	@scripts/step.sh begin
	@scripts/step.sh "PostgreSQL's server binaries" $(MAKE) --no-print-directory deps
	@scripts/step.sh "lint: gofmt, go vet, staticcheck" $(MAKE) --no-print-directory lint
	@scripts/step.sh "lint the OpenAPI document: Redocly CLI" $(MAKE) --no-print-directory lint-openapi
	@scripts/step.sh "the OpenAPI document against chatd: Prism proxy" $(MAKE) --no-print-directory check-prism
	@scripts/step.sh "deploy/ checks: helm, promtool, caddy, systemd-analyze, shellcheck" $(MAKE) --no-print-directory check-deploy
	@scripts/step.sh "Go tests, race detector" $(GO) test -race -count=1 -timeout 30m ./...
	@scripts/step.sh "fuzz" $(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME) FUZZMINTIME=$(FUZZMINTIME)
	@scripts/step.sh "web: SDK against chatd, demo in Chromium" $(MAKE) --no-print-directory test-web
	@scripts/step.sh summary

## deps-web: install what the web tests need (Debian's chromium, npm packages)
deps-web:
	@scripts/ensure-web.sh

## test-web: the JavaScript SDK's tests and the browser tests, against bin/chatd
test-web: deps deps-web build
	cd web/sdk && CHATD_BIN=$(CURDIR)/bin/chatd npm test
	cd web/e2e && CHATD_BIN=$(CURDIR)/bin/chatd npm test

## fuzz: fuzz the WebSocket frame decoder and encoders (pkg/wire), and the
## stream envelope's encoder and decoder against encoding/json, $(FUZZTIME)
## executions each (10-30 s on two cores)
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeFrame$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) ./pkg/wire
	$(GO) test -run '^$$' -fuzz '^FuzzEnvelopeJSON$$' -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) .

## bench: Go benchmarks of the hot paths (chatload is the system benchmark)
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...

## check-deploy: lint and render the Helm chart, check and unit-test the alert
## rules, validate the compose proxy's Caddyfile, verify the systemd unit,
## shellcheck the scripts (helm, promtool and caddy are built once into
## GOPATH/bin by scripts/ensure-deploy-tools.sh; docs/operations.md)
DEPLOY_BIN = $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)
CHART      = deploy/helm/chatd
check-deploy: build
	@scripts/ensure-deploy-tools.sh >/dev/null
	$(DEPLOY_BIN)/helm lint --strict $(CHART) -f $(CHART)/ci/inline-values.yaml
	$(DEPLOY_BIN)/helm lint --strict $(CHART) -f $(CHART)/ci/external-values.yaml
	$(DEPLOY_BIN)/helm template chatd $(CHART) -f $(CHART)/ci/inline-values.yaml >/dev/null
	$(DEPLOY_BIN)/helm template chatd $(CHART) -f $(CHART)/ci/external-values.yaml >/dev/null
	@if $(DEPLOY_BIN)/helm template chatd $(CHART) -f $(CHART)/ci/inline-values.yaml \
	    --set terminationGracePeriodSeconds=15 >/dev/null 2>&1; then \
	  echo "$(CHART) rendered a grace period shorter than its drain"; exit 1; fi
	$(DEPLOY_BIN)/promtool check config deploy/prometheus/prometheus.yml
	$(DEPLOY_BIN)/promtool check rules deploy/prometheus/alerts.yaml
	$(DEPLOY_BIN)/promtool test rules deploy/prometheus/alerts_test.yaml
	$(DEPLOY_BIN)/caddy validate --adapter caddyfile --config deploy/compose/Caddyfile
	deploy/systemd/verify.sh bin/chatd
	shellcheck --severity=warning scripts/*.sh .ci/run deploy/systemd/*.sh

clean:
	rm -rf bin
