# Set-up is part of every target: the first call builds .venv (CPU torch first, then ragtrack
# with its dev extra); later calls reuse it until pyproject.toml changes.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ragtrack-installed
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: demo test bench ui server

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
	$(BIN)/pip install --quiet torch==2.13.0 2>&1 | grep -v '^WARNING: Location' || true
	$(BIN)/pip install --quiet -e '.[dev]' 2>&1 | grep -v '^WARNING: Location' || true
	$(BIN)/python -c "import ragtrack, torch, mlflow, hydra, sentence_transformers"
	touch $(STAMP)

demo: $(STAMP)  ## the demo: 3 adapters x 2 prompts, logged to ./mlflow.db
	$(BIN)/ragtrack run -m adapter=base,lora_a,lora_b prompt=v1,v2

test: $(STAMP)  ## format, lint and type checks, then the test suite
	$(BIN)/ruff format --check --quiet ragtrack tests bench hydra_plugins
	$(BIN)/ruff check --quiet ragtrack tests bench hydra_plugins
	$(BIN)/mypy
	$(BIN)/pytest -q

bench: $(STAMP)  ## the benchmarks in bench/ (several minutes: the store stress runs real processes)
	$(BIN)/python bench/bench_scorers.py
	$(BIN)/python bench/bench_rag_quality.py
	$(BIN)/python bench/bench_rag_quality.py --check-reliability
	$(BIN)/python bench/bench_rag.py
	$(BIN)/python bench/bench_run.py
	$(BIN)/python bench/bench_predictions.py
	$(BIN)/python bench/bench_compare.py
	$(BIN)/python bench/bench_index.py
	$(BIN)/python bench/bench_traces.py --run
	$(BIN)/python bench/stress_store.py --trials 5 --sweeps 1
	$(BIN)/python bench/contention_store.py
	$(BIN)/python bench/bench_llm.py
	$(BIN)/python bench/bench_llm_judge.py

ui: $(STAMP)  ## the MLflow UI on the demo's store (created or migrated first, under ragtrack's lock)
	$(BIN)/ragtrack store init --tracking-uri sqlite:///$(CURDIR)/mlflow.db
	@echo "open http://127.0.0.1:5000/#/experiments?workflowType=machine_learning  (the runs view, not the GenAI one)"
	$(BIN)/mlflow ui --backend-store-uri sqlite:///$(CURDIR)/mlflow.db --host 127.0.0.1 --port 5000

server: $(STAMP)  ## a team tracking stack on 127.0.0.1 (PostgreSQL + S3 stand-in + mlflow server) until Ctrl-C; AUTH=1 for basic-auth
	$(BIN)/python -m ragtrack.app.devserver --port $(or $(PORT),5000) $(if $(AUTH),--auth)
