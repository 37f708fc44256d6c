/* libFuzzer's driver, for bess-fuzz built with -sanitize=fuzzer (make fuzz). SwiftPM links an
   executable's entry point as `main`, so libFuzzer's own `main` is not used: bess-fuzz calls the
   driver itself. Declaration only: the symbol comes from libclang_rt.fuzzer in that build and is never
   referenced in any other. */
#ifndef BESSD_CFUZZER_SHIM_H
#define BESSD_CFUZZER_SHIM_H
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
#endif
