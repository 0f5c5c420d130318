#include "memory/arena_allocator.hpp"

#include "symmcomm/error.hpp"

namespace symmcomm::detail {
namespace {
std::size_t round_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}
bool is_power_of_two(std::size_t x) {
  return x != 0 && (x & (x - 1)) == 0;
}
}  // namespace

ArenaAllocator::ArenaAllocator(std::size_t granularity) : granularity_(granularity) {
  SYMMCOMM_EXPECTS(is_power_of_two(granularity),
                   "granularity " << granularity << " is not a power of two");
}

std::size_t ArenaAllocator::add_arena(std::size_t bytes) {
  std::size_t const usable = bytes / granularity_ * granularity_;
  SYMMCOMM_EXPECTS(usable > 0, "arena of " << bytes << " bytes is smaller than the granularity "
                                           << granularity_);
  Arena arena;
  arena.bytes = usable;
  arena.free.emplace(0, usable);
  arenas_.push_back(std::move(arena));
  reserved_ += usable;
  return arenas_.size() - 1;
}

bool ArenaAllocator::remove_last_arena_if_empty() {
  if (arenas_.empty() || !arenas_.back().used.empty()) return false;
  reserved_ -= arenas_.back().bytes;
  arenas_.pop_back();
  return true;
}

std::optional<ArenaAllocator::Block> ArenaAllocator::allocate(std::size_t bytes,
                                                              std::size_t alignment) {
  SYMMCOMM_EXPECTS(bytes > 0, "bytes is 0");
  SYMMCOMM_EXPECTS(is_power_of_two(alignment),
                   "alignment " << alignment << " is not a power of two");
  if (alignment < granularity_) alignment = granularity_;
  if (bytes > SIZE_MAX - granularity_) return std::nullopt;
  std::size_t const size = round_up(bytes, granularity_);
  for (std::size_t a = 0; a < arenas_.size(); ++a) {
    Arena& arena = arenas_[a];
    for (auto it = arena.free.begin(); it != arena.free.end(); ++it) {
      std::size_t const start = it->first;
      std::size_t const length = it->second;
      std::size_t const aligned = round_up(start, alignment);
      if (aligned - start > length || length - (aligned - start) < size) continue;
      std::size_t const tail_start = aligned + size;
      std::size_t const tail_length = start + length - tail_start;
      arena.free.erase(it);
      if (aligned > start) arena.free.emplace(start, aligned - start);
      if (tail_length > 0) arena.free.emplace(tail_start, tail_length);
      arena.used.emplace(aligned, size);
      in_use_ += size;
      ++live_;
      return Block{a, aligned, size};
    }
  }
  return std::nullopt;
}

std::optional<std::size_t> ArenaAllocator::deallocate(std::size_t arena_index, std::size_t offset) {
  if (arena_index >= arenas_.size()) return std::nullopt;
  Arena& arena = arenas_[arena_index];
  auto used = arena.used.find(offset);
  if (used == arena.used.end()) return std::nullopt;
  std::size_t start = offset;
  std::size_t length = used->second;
  std::size_t const size = length;
  arena.used.erase(used);
  // Coalesce with the free neighbours on both sides.
  auto next = arena.free.lower_bound(start);
  if (next != arena.free.end() && next->first == start + length) {
    length += next->second;
    next = arena.free.erase(next);
  }
  if (next != arena.free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      length += prev->second;
      arena.free.erase(prev);
    }
  }
  arena.free.emplace(start, length);
  in_use_ -= size;
  --live_;
  return size;
}

std::optional<ArenaAllocator::Block> ArenaAllocator::find(std::size_t arena_index,
                                                          std::size_t offset) const {
  if (arena_index >= arenas_.size()) return std::nullopt;
  auto const& used = arenas_[arena_index].used;
  auto it = used.find(offset);
  if (it == used.end()) return std::nullopt;
  return Block{arena_index, offset, it->second};
}

std::size_t ArenaAllocator::largest_free() const {
  std::size_t best = 0;
  for (const auto& arena : arenas_) {
    for (const auto& [offset, length] : arena.free) best = length > best ? length : best;
  }
  return best;
}

std::vector<ArenaAllocator::Block> ArenaAllocator::live() const {
  std::vector<Block> blocks;
  blocks.reserve(live_);
  for (std::size_t a = 0; a < arenas_.size(); ++a) {
    for (const auto& [offset, size] : arenas_[a].used) blocks.push_back(Block{a, offset, size});
  }
  return blocks;
}

bool ArenaAllocator::check_invariants() const {
  std::size_t reserved = 0, in_use = 0, live = 0;
  for (const auto& arena : arenas_) {
    reserved += arena.bytes;
    // Walk free and used ranges in address order: they must tile [0, bytes) exactly.
    auto f = arena.free.begin();
    auto u = arena.used.begin();
    std::size_t cursor = 0;
    bool previous_was_free = false;
    while (f != arena.free.end() || u != arena.used.end()) {
      bool const take_free =
          u == arena.used.end() || (f != arena.free.end() && f->first < u->first);
      auto const& range = take_free ? *f : *u;
      if (range.first != cursor || range.second == 0) return false;
      if (range.first % granularity_ != 0 || range.second % granularity_ != 0) return false;
      if (take_free && previous_was_free) return false;  // adjacent free ranges: not coalesced
      previous_was_free = take_free;
      cursor += range.second;
      if (take_free) {
        ++f;
      } else {
        in_use += range.second;
        ++live;
        ++u;
      }
    }
    if (cursor != arena.bytes) return false;
  }
  return reserved == reserved_ && in_use == in_use_ && live == live_;
}

}  // namespace symmcomm::detail
