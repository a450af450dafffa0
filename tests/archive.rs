//! Packing, unpacking and verifying bundle archives through the library API.
