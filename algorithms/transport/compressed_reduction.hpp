#pragma once
// Compressed payloads on any reducing collective, written once for all of them.
#include <memory>

#include "algorithms/compression/compressor.hpp"
#include "sim/api/aggregator.hpp"

namespace aggsim {

// Wraps `collective` (ring all-reduce, trees, ...) for a summable compressor: each rank compresses,
// the collective reduces payload.values as if they were the gradient (wire elements from the
// encoding formula), and each rank decodes the reduced values. Throws std::invalid_argument for a
// compressor that is not summable.
std::unique_ptr<Aggregator> make_compressed_reduction(std::unique_ptr<Aggregator> collective,
                                                      std::unique_ptr<Compressor> compressor);

}  // namespace aggsim
