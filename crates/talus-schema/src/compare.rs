//! Tables written by `talus compare` (declared by the compare stage).
