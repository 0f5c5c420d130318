#pragma once
// Private to symmcomm (SymmAllocator's implementation).
/// @file arena_allocator.hpp
/// @brief The pool's bookkeeping as pure code (no CUDA): offsets inside a list of arenas,
/// allocated first-fit in arena order with free-block coalescing. Deterministic: the same call
/// sequence yields the same (arena, offset) results on every rank. Not thread-safe by itself.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "symmcomm/memory/symm_allocator.hpp"  // kPoolAlignment

namespace symmcomm::detail {

class ArenaAllocator {
 public:
  /// @brief Where an allocation lies.
  struct Block {
    std::size_t arena = 0;
    std::size_t offset = 0;
    std::size_t bytes = 0;  ///< bytes reserved for it (the request rounded up)
    bool operator==(const Block& o) const noexcept {
      return arena == o.arena && offset == o.offset && bytes == o.bytes;
    }
  };

  /// @brief `granularity` (a power of two): every offset and size is a multiple of it.
  explicit ArenaAllocator(std::size_t granularity = kPoolAlignment);

  /// @brief Appends an arena of `bytes` (rounded down to the granularity); returns its index.
  std::size_t add_arena(std::size_t bytes);
  /// @brief Removes the last arena if it has no live blocks; false otherwise.
  bool remove_last_arena_if_empty();
  /// @brief First fit over arenas in order, lowest offset first. `alignment` is a power of two
  /// (at least the granularity is used). Nothing when no free range fits.
  std::optional<Block> allocate(std::size_t bytes, std::size_t alignment);
  /// @brief Frees the block at (arena, offset); returns its size, or nothing when no live block
  /// starts there (foreign pointer or double free). Coalesces with free neighbours.
  std::optional<std::size_t> deallocate(std::size_t arena, std::size_t offset);
  /// @brief The live block starting at (arena, offset), if any.
  std::optional<Block> find(std::size_t arena, std::size_t offset) const;

  std::size_t arena_count() const noexcept { return arenas_.size(); }
  std::size_t arena_bytes(std::size_t arena) const { return arenas_.at(arena).bytes; }
  std::size_t reserved_bytes() const noexcept { return reserved_; }
  std::size_t in_use_bytes() const noexcept { return in_use_; }
  std::size_t live_blocks() const noexcept { return live_; }
  std::size_t granularity() const noexcept { return granularity_; }
  /// @brief Largest single free range over all arenas.
  std::size_t largest_free() const;
  /// @brief Live blocks in (arena, offset) order.
  std::vector<Block> live() const;
  /// @brief Checks internal invariants (free and live ranges tile each arena exactly, free
  /// ranges never adjacent, counters agree). For tests; returns false on any violation.
  bool check_invariants() const;

 private:
  struct Arena {
    std::size_t bytes = 0;
    std::map<std::size_t, std::size_t> free;  // offset -> size, never adjacent
    std::map<std::size_t, std::size_t> used;  // offset -> size
  };
  std::size_t granularity_;
  std::vector<Arena> arenas_;
  std::size_t reserved_ = 0;
  std::size_t in_use_ = 0;
  std::size_t live_ = 0;
};

}  // namespace symmcomm::detail
