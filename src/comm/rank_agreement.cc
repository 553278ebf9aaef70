#include "comm/rank_agreement.h"

#include <algorithm>
#include <cstring>

#include "util/sha256.h"

namespace vdnn {
namespace {

// One setting as it travels: fixed-size fields, NUL-padded (a longer name or value is cut).
struct SettingRecord {
  char name[32];
  char shown[64];
  char sha256[64];  // of the whole value, hex
};

void copy_cut(char* field, size_t size, const std::string& text) {
  std::memset(field, 0, size);
  std::memcpy(field, text.data(), std::min(size, text.size()));
}

std::string text_of(const char* field, size_t size) { return std::string(field, strnlen(field, size)); }

std::string records_of(const std::vector<RankSetting>& settings) {
  std::string bytes(settings.size() * sizeof(SettingRecord), '\0');
  for (size_t i = 0; i < settings.size(); ++i) {
    SettingRecord r;
    copy_cut(r.name, sizeof r.name, settings[i].name);
    copy_cut(r.shown, sizeof r.shown, settings[i].value);
    const std::string digest = sha256_hex(settings[i].value.data(), settings[i].value.size());
    std::memcpy(r.sha256, digest.data(), sizeof r.sha256);
    std::memcpy(bytes.data() + i * sizeof r, &r, sizeof r);
  }
  return bytes;
}

SettingRecord record_at(const std::string& records, size_t i) {
  SettingRecord r;
  std::memcpy(&r, records.data() + i * sizeof r, sizeof r);
  return r;
}

// "16 on rank 1" (with the digest's start when the shown values alone look alike).
std::string value_on(int rank, const SettingRecord& r, bool with_digest) {
  const std::string shown = text_of(r.shown, sizeof r.shown);
  return VDNN_MSG((shown.empty() ? "none" : shown)
                  << (with_digest ? " (sha256 " + text_of(r.sha256, 16) + "...)" : std::string()) << " on rank "
                  << rank);
}

// The first setting of rank `rank` (`other`) that differs from rank 0's (`first`), as a message;
// "" when none does.
std::string first_difference(const std::string& first, const std::string& other, int rank) {
  if (other.size() != first.size())
    return VDNN_MSG("the ranks run different programs: rank 0 compares " << first.size() / sizeof(SettingRecord)
                                                                         << " settings, rank " << rank << " "
                                                                         << other.size() / sizeof(SettingRecord));
  for (size_t i = 0; i < first.size() / sizeof(SettingRecord); ++i) {
    const SettingRecord a = record_at(first, i), b = record_at(other, i);
    if (std::memcmp(&a, &b, sizeof a) == 0) continue;
    const bool alike = std::memcmp(a.shown, b.shown, sizeof a.shown) == 0;
    return VDNN_MSG("the ranks were started differently: " << text_of(a.name, sizeof a.name) << " is "
                                                           << value_on(0, a, alike) << " but "
                                                           << value_on(rank, b, alike));
  }
  return "";
}

}  // namespace

void check_ranks_agree(Communicator& comm, const std::vector<RankSetting>& settings) {
  if (comm.size() == 1) return;
  const std::vector<std::string> all = comm.gather_strings(records_of(settings));
  for (int rank = 1; rank < comm.size(); ++rank)
    if (const std::string why = first_difference(all[0], all[rank], rank); !why.empty()) throw RanksDisagree(why);
}

}  // namespace vdnn
