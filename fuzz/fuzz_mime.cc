// libFuzzer target: a raw mail message through the IMAP connector's parsing (GMime, libxml2's
// HTML parser) into the typed items it ingests. Whatever the input, the items must be valid
// ingest input or nothing, and a parsed subject never holds a line break.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "connectors/mime.h"
#include "engines/sync/mail_sync.h"
#include "fuzz/fuzz_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cortex;
  std::string raw(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseMail(raw);
  if (parsed.ok() && parsed->subject.find_first_of("\r\n") != std::string::npos) std::abort();
  auto items = MailItems(raw, "message_received", std::nullopt, FromUnixMillis(1796300000000),
                         [](const std::string&) { return false; });
  if (items.empty()) return 0;
  fuzz::FuzzWorld& w = fuzz::World();
  auto report = IngestItems(*w.store, w.clock, w.demo.id, std::move(items), nullptr);
  if (!report.ok()) {  // the connector made an item ingest refuses
    std::fprintf(stderr, "ingest refused: %s\n", report.status().message().c_str());
    std::abort();
  }
  return 0;
}
