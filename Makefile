# chatd: `make run` serves on the embedded default; `make test` runs everything.
GO        ?= go
STATICCHECK = $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
DATA_DIR  ?= ./data
LISTEN    ?= 127.0.0.1:8080
FUZZTIME  ?= 10s

.PHONY: run build test lint deps fuzz bench clean cluster cluster-down

## deps: install what chatd and its tests need (PostgreSQL's server binaries)
deps:
	@scripts/ensure-postgres.sh

## build: compile chatd and chatload into ./bin
build:
	$(GO) build -o bin/chatd ./cmd/chatd
	@if [ -d cmd/chatload ]; then $(GO) build -o bin/chatload ./cmd/chatload; fi

## run: start chatd with embedded NATS and a managed PostgreSQL under $(DATA_DIR)
run: deps build
	@echo "chatd: http://$(LISTEN)  (ready when /readyz answers 200)"
	@echo "token: ./bin/chatd token alice --data-dir $(DATA_DIR)"
	./bin/chatd --listen $(LISTEN) --data-dir $(DATA_DIR)

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

## test: lint, then every test with the race detector, then a short fuzz run
test: deps lint
	$(GO) test -race -count=1 -timeout 30m ./...
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)

## fuzz: fuzz the WebSocket frame decoder and encoders (pkg/wire), and the
## stream envelope's encoder and decoder against encoding/json, $(FUZZTIME) each
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeFrame$$' -fuzztime $(FUZZTIME) ./pkg/wire
	$(GO) test -run '^$$' -fuzz '^FuzzEnvelopeJSON$$' -fuzztime $(FUZZTIME) .

## bench: Go benchmarks of the hot paths (chatload is the system benchmark)
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin
