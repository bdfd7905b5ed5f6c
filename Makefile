# faster: build, test, demo, bench. Every target installs what it needs
# (scripts/setup.sh, idempotent) before it runs.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
BIN := bin/faster
DATA ?= /usr/share/datasets/fashion-mnist
OUT ?= out
FUZZTIME ?= 10s


.PHONY: all setup build demo test testservers testrace testnocgo accuracy schedules fuzz fuzzshort bench lint vet clean

all: build

setup:
	@scripts/setup.sh

build:
	$(GO) build -o $(BIN) ./cmd/faster

.PHONY: wheel

# The Python wheel of python/ with a serve-capable faster binary inside
# (libjpeg-turbo static, no oneDNN or Gloo): pip install dist/faster-*.whl.
wheel: setup
	@scripts/wheel.sh dist

# The main job on the default data: pack the real Fashion-MNIST into
# TFRecord shards and verify them.
demo: setup build
	@scripts/demo.sh $(BIN) $(DATA) $(OUT)

# What CI runs: vet, the race-enabled tests, the CGO_ENABLED=0 tests, and a
# short fuzz pass over every decoder and reader.
test: setup vet testrace testnocgo accuracy schedules
	@$(MAKE) --no-print-directory fuzz FUZZTIME=3s

# The test servers, versitygw (S3) and fake-gcs-server (GCS), are built
# once, before the packages that start them run in parallel: from the nested
# module internal/testservers (not the library's go.mod), cached under
# ~/.cache/faster-test-bin.
testservers:
	FASTER_REQUIRE_DATA=1 $(GO) test -count=1 -timeout 30m -run TestBuild ./storage/s3test ./storage/gcstest

testrace: testservers
	FASTER_REQUIRE_DATA=1 FASTER_REQUIRE_INTEROP=1 $(GO) test -race -count=1 -timeout 20m ./...

testnocgo: testservers
	FASTER_REQUIRE_DATA=1 CGO_ENABLED=0 $(GO) test -count=1 -timeout 20m ./...

# The non-race cgo step: the tests that -race and CGO_ENABLED=0 both skip
# (too slow under -race, or needing oneDNN / libjpeg-turbo): AMP vs fp32 on
# Fashion-MNIST, one epoch of a subset, learning on packed shards, ResNet-18
# through the CLI, the decoder's steady-state allocations, and ranks under
# torch's torchrun and Open MPI's mpirun (on one machine; torchrun also on two network namespaces), and a
# two-machine run resumed from its checkpoint. A skip here is a failure: nothing else runs them.
ACCURACY_TESTS := TestTrainAMPAccuracy|TestTrainFashionMNISTSubset|TestTrainOnPackedShards|TestTrainCLIResNet18|TestDecodeAllocs|TestTrainUnderTorchrun|TestTrainUnderMpirun|TestTrainUnderSrun|TestTorchrunTwoMachines|TestTrainTwoMachinesResume|TestJourney
accuracy:
	@out=$$(mktemp); FASTER_REQUIRE_DATA=1 FASTER_REQUIRE_INTEROP=1 $(GO) test -count=1 -timeout 45m -run '^($(ACCURACY_TESTS))$$' -v ./cmd/faster ./imgcodec >$$out 2>&1; rc=$$?; \
	  if [ $$rc -ne 0 ]; then cat $$out; else grep -E -- '^(---|ok|FAIL|PASS)|accuracy' $$out; fi; \
	  if grep -q -- '--- SKIP' $$out; then echo "accuracy: a test was skipped, and no other step runs it"; rc=1; fi; \
	  rm -f $$out; exit $$rc

# The kernels' CPU build in other schedules of blocks and threads (races a
# GPU could show; kernels.Schedule): the kernels package's tests again,
# reversed and with one thread behind the others between SYNCs, the cuda
# twin's behind, and nvJPEG's resize kernels reversed. Not under -race (several times as long there, and the
# kernels are C). A skip here is a failure: nothing else runs them.
schedules:
	@out=$$(mktemp); $(GO) test -count=1 -timeout 30m -run '^(TestEverySchedule|TestTwinInBehindSchedule|TestInReverse)$$' -v ./train/cuda ./train/cuda/kernels ./gpudecode/nvjpeg/kernels >$$out 2>&1; rc=$$?; \
	  if [ $$rc -ne 0 ]; then cat $$out; else grep -E -- '^(---|ok|FAIL|PASS)|schedule' $$out; fi; \
	  if grep -q -- '--- SKIP' $$out; then echo "schedules: a test was skipped, and no other step runs it"; rc=1; fi; \
	  rm -f $$out; exit $$rc

# -fuzzminimizetime 100x: Go minimises every new interesting input before
# it explores further, and minimising a tar of a few kilobytes for seconds
# left FuzzWDS about 6 counted inputs a second (33 in 11 s); with 100 tries
# per minimisation it runs ~2,000 a second. A crasher is still saved.
# Every Fuzz* target of the repository, found by scripts/fuzz.sh (not a
# typed list), FUZZTIME each.
fuzz:
	@GO=$(GO) scripts/fuzz.sh $(FUZZTIME)

bench: setup build
	$(GO) test -run '^$$' -bench . -benchmem ./...
	# DDP over a shaped link (two network namespaces, tc rate 1gbit delay 1ms),
	# ours beside torch's: step times, all-reduce alone, the share hidden.
	bench/run_shaped_link.sh --json $(OUT)/shaped_link.json
	# FixRes on photographs, ours beside PyTorch: train 224/128/160, test 224, BatchNorm statistics recomputed at 224.
	bench/run_fixres.sh
	# The larger journey: 200 classes x 12 photographs through every room.
	FASTER_JOURNEY=large FASTER_REQUIRE_DATA=1 $(GO) test -count=1 -timeout 60m -run '^TestJourney$$' -v ./cmd/faster
	# Where a sample's CPU time goes, ours beside torchvision's recipe.
	bench/run_profile.sh
	# The first epoch and a loader made per epoch, faster.Loader beside DataLoader.
	bench/run_first_epoch.sh
	# The reference recipe with TrivialAugmentWide + RandomErasing, beside torchvision, CPU per image.
	bench/run_augment_recipe.sh 1 64 5
	# The downscaled pack (shorter edge 256) against the full-size one at 224/160/128, beside torchvision.
	bench/run_downscaled.sh 3
	# The same at ImageNet's bytes per pixel (sensor-like noise), 10 epochs: the steady state.
	NOISE=8 bench/run_downscaled.sh 2 0 10
	# ThinNet's training step at batch 512, 1 and 2 threads, beside PyTorch's.
	bench/run_step.sh
	# What bf16 AMP gains over fp32 (Winograd and direct) at batch 512, beside PyTorch's fp32 and autocast.
	bench/run_amp.sh
	# Time to a target accuracy with the fast recipe, ours beside PyTorch (curve JSON and PNG).
	bench/run_time_to_accuracy.sh
	# Winograd vs direct convolutions over whole fast-recipe runs, beside a rounding-only control.
	bench/run_winograd_curves.sh
	# The same on the full-width step of the step table (batch 512, plain SGD, one epoch).
	FILTERS=32,64,128 BATCH=512 LR=0.001 RECIPE= EPOCHS=1 EVAL_EVERY=13 SEEDS="1 2" OUT=$(OUT)/winograd-wide bench/run_winograd_curves.sh
	# Time to accuracy by configuration of ours (direct, 1 thread, DDP), beside PyTorch.
	bench/run_tta_configs.sh
	# Time to accuracy at the seed's batch 512 (full-width ThinNet), seeds 1-5, both engines from the same start.
	bench/run_tta_seeds.sh

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) test -count=1 -run '^TestLayering$$' ./internal/repocheck >/dev/null || $(GO) test -count=1 -run '^TestLayering$$' ./internal/repocheck

lint: vet
	@if command -v staticcheck >/dev/null; then staticcheck ./...; else $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...; fi

clean:
	rm -rf bin $(OUT)
