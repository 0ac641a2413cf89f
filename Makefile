# The two commands of the README: `make demo` (main job, embedded defaults) and `make test`.
# Both install what they need on a fresh machine: Debian packages, a virtualenv, the package.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench system clean

demo: system $(STAMP)
	$(VENV)/bin/hippocamp models install qwen2.5-coder-1.5b
	$(VENV)/bin/hippocamp quickstart

test: system $(STAMP)
	$(PY) -m ruff check src tests scripts bench
	$(PY) -m ruff format --check src tests scripts bench
	$(PY) -m mypy
	HIPPOCAMP_REQUIRE_MODELS=1 $(PY) -m pytest

bench: system $(STAMP)
	$(PY) bench/run.py

system:
	@scripts/install-system.sh

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	CMAKE_ARGS="-DLLAVA_BUILD=OFF" $(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,local,embed,embed-more,ocr,asr,asr-base,build,ray]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) runs build src/*.egg-info
