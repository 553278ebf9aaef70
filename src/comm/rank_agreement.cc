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

// The first record: the call the settings belong to.
constexpr const char* kCall = "the call";
constexpr const char* kStartUp = "a Net's or a run's start-up check";

// The first difference between rank 0's records (`first`) and rank `rank`'s (`other`), as a
// message; "" when none. The call first: ranks in different calls compare unrelated lists.
std::string first_difference(const std::string& first, const std::string& other, int rank) {
  const size_t settings0 = first.size() / sizeof(SettingRecord), settings = other.size() / sizeof(SettingRecord);
  if (settings0 == 0 || settings == 0 || other.size() % sizeof(SettingRecord) != 0)
    return VDNN_MSG("the ranks run different programs: rank " << rank << " sent " << other.size()
                                                              << " bytes to the check of their settings");
  const SettingRecord call0 = record_at(first, 0), call = record_at(other, 0);
  if (std::memcmp(&call0, &call, sizeof call) != 0)
    return VDNN_MSG("the ranks are in different calls: rank 0 called " << text_of(call0.shown, sizeof call0.shown)
                                                                       << " but rank " << rank << " called "
                                                                       << text_of(call.shown, sizeof call.shown));
  const std::string called = text_of(call0.shown, sizeof call0.shown);
  const std::string context =
      called == kStartUp ? "the ranks were started differently" : "the ranks' " + called + " calls differ";
  if (settings != settings0)  // the call's record is not a setting
    return VDNN_MSG("the ranks run different programs: rank 0 compares " << settings0 - 1 << " settings, rank " << rank
                                                                         << " " << settings - 1);
  for (size_t i = 1; i < settings0; ++i) {
    const SettingRecord a = record_at(first, i), b = record_at(other, i);
    if (std::memcmp(&a, &b, sizeof a) == 0) continue;
    const bool alike = std::memcmp(a.shown, b.shown, sizeof a.shown) == 0;
    return VDNN_MSG(context << ": " << text_of(a.name, sizeof a.name) << " is " << value_on(0, a, alike) << " but "
                            << value_on(rank, b, alike));
  }
  return "";
}

}  // namespace

void check_ranks_agree(Communicator& comm, const std::vector<RankSetting>& settings, const std::string& call) {
  if (comm.size() == 1) return;
  std::vector<RankSetting> records{{kCall, call.empty() ? kStartUp : call}};
  records.insert(records.end(), settings.begin(), settings.end());
  const std::vector<std::string> all = comm.gather_strings(records_of(records));
  for (int rank = 1; rank < comm.size(); ++rank)
    if (const std::string why = first_difference(all[0], all[rank], rank); !why.empty()) throw RanksDisagree(why);
}

}  // namespace vdnn
