// libFuzzer target: a JSONL ingest batch (entities and episodes) into the demo workspace,
// through validation, identifier resolution, triage and the write transaction. A batch is
// all or nothing: a refused one must leave the world version where it was.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/fuzz_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cortex;
  fuzz::FuzzWorld& w = fuzz::World();
  std::string_view jsonl(reinterpret_cast<const char*>(data), size);
  auto before = FindWorkspace(*w.store, "demo");
  auto report = IngestJsonl(*w.store, w.clock, w.demo.id, jsonl);
  auto after = FindWorkspace(*w.store, "demo");
  if (!before.ok() || !after.ok()) std::abort();
  if (!report.ok()) {
    if (report.status().code() != Code::kInvalidArgument) std::abort();  // only bad input
    if (before->world_version != after->world_version) std::abort();     // nothing written
  }
  return 0;
}
