# libFuzzer targets for libwaitlist and the FastCGI glue (GNU make, clang).
# The top-level `make fuzz` runs this with SRC (the source tree), BUILD
# (where configure wrote config.h) and OUT (objects, binaries, the growing
# corpora and any crash inputs); by hand, from the source tree after
# ./configure:
#   make -f fuzz/targets.mk run FUZZ_SECONDS=60      # every target
#   make -f fuzz/targets.mk run-body FUZZ_SECONDS=600
# Each target links the library sources compiled with the fuzzer's
# coverage instrumentation and ASan/UBSan, with fuzz/fakedb.c standing in
# for lib/sql.c and lib/txn.c (no MariaDB).  Seeds are in
# fuzz/corpus/<target>/.

SRC ?= .
BUILD ?= $(SRC)
OUT ?= $(BUILD)/fuzz-out
FUZZ_SECONDS ?= 60
CC = clang

TARGETS = body route cursor config retry_after iso_time fcgi_params

PKGS = libcjson libcurl libcrypto
SAN = -fsanitize=address,undefined -fno-sanitize-recover=undefined
CFLAGS = -g -O1 -fno-omit-frame-pointer $(SAN) -std=gnu11 \
	-Wall -Wextra -Werror -Wno-missing-field-initializers \
	-I$(BUILD) -I$(SRC)/lib -I$(SRC)/fcgi -I$(SRC)/fuzz \
	$(shell pkg-config --cflags $(PKGS))
LIBS = $(shell pkg-config --libs $(PKGS)) -lfcgi -lpthread -lm

LIB_SRC = $(filter-out $(SRC)/lib/sql.c $(SRC)/lib/txn.c,$(wildcard $(SRC)/lib/*.c))
OBJ = $(patsubst $(SRC)/%.c,$(OUT)/obj/%.o,$(LIB_SRC)) \
	$(OUT)/obj/fcgi/worker.o $(OUT)/obj/fuzz/fakedb.o \
	$(OUT)/obj/fuzz/common.o

all: $(TARGETS:%=$(OUT)/fuzz_%)

$(OUT)/obj/%.o: $(SRC)/%.c $(wildcard $(SRC)/lib/*.h) $(SRC)/fuzz/fuzz.h
	@mkdir -p $(@D)
	@echo "  FUZZCC   $*.c"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(OUT)/fuzz_%: $(SRC)/fuzz/fuzz_%.c $(OBJ)
	@echo "  FUZZLD   $(@F)"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(OBJ) $(LIBS)

# New inputs go to $(OUT)/corpus/<target>; the committed seeds are read.
# A crash leaves its input as $(OUT)/crash-<target>-* and fails the run.
run: $(TARGETS:%=run-%)

run-%: $(OUT)/fuzz_%
	@mkdir -p $(OUT)/corpus/$*
	@echo "fuzz: $* for $(FUZZ_SECONDS) s"
	@ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
	$(OUT)/fuzz_$* -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
		-rss_limit_mb=2048 -max_len=70000 -print_final_stats=1 \
		-artifact_prefix=$(OUT)/crash-$*- \
		$(if $(wildcard $(SRC)/fuzz/$*.dict),-dict=$(SRC)/fuzz/$*.dict) \
		$(OUT)/corpus/$* $(SRC)/fuzz/corpus/$* 2>$(OUT)/$*.log || \
		{ tail -n 60 $(OUT)/$*.log; exit 1; }
	@grep -E '^stat::number_of_executed_units|^#[0-9]+ *DONE' $(OUT)/$*.log | tr '\n' ' '; echo

clean:
	rm -rf $(OUT)

.PHONY: all run clean
.SECONDARY:
