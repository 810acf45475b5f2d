// Fuzz target: the MRT reader (mrt) and every record decoder, on
// records framed from the input. Checks that every span handed out lies
// inside the input and that a RIB iterates exactly its entry count.
// Seeds (fuzz/corpus/mrt/): the first records of each file in
// tests/data/real/mrt; its README gives their origins and licences.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "mrt/mrt.h"
#include "fuzz/fuzz.h"

namespace {

void check_inside(petrel::bytes::Span outer, petrel::bytes::Span inner) {
  if (inner.empty()) return;
  if (inner.data() < outer.data() || inner.data() + inner.size() > outer.data() + outer.size())
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto all = petrel::fuzz::span(data, size);
  petrel::mrt::RecordReader reader(all);
  while (!reader.done()) {
    auto rec = reader.next();
    if (!rec) break;
    check_inside(all, rec->body);
    if (auto m = petrel::mrt::decode_bgp4mp_message(*rec)) check_inside(rec->body, m->message);
    (void)petrel::mrt::decode_bgp4mp_state_change(*rec);
    if (auto e = petrel::mrt::decode_table_dump(*rec)) check_inside(rec->body, e->attributes);
    (void)petrel::mrt::decode_peer_index_table(*rec);
    if (auto rib = petrel::mrt::decode_rib(*rec)) {
      size_t n = 0;
      for (const auto& entry : *rib) {
        check_inside(rec->body, entry.attributes);
        ++n;
      }
      if (n != rib->entry_count) std::abort();
    }
  }
  return 0;
}
