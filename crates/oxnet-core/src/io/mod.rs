//! Reading and writing MXNet's files.
//!
//! - [`params`]: MXNet 1.9.1's binary NDArray format, what `mx.nd.save` /
//!   `mx.nd.load` write and read (`.params` files) and what pickling an NDArray
//!   stores (the single-array "raw bytes" form).
//! - [`recordio`]: MXNet's RecordIO framing and image record header.
//! - [`image`]: JPEG/PNG decode and encode; [`imgproc`]: OpenCV-style resize,
//!   borders, crops; [`imgpipe`]: `ImageRecordIter`'s decode-and-augment pipeline.

pub mod image;
pub mod imgpipe;
pub mod imgproc;
pub mod params;
pub mod recordio;

pub use params::{
    load, load_detailed, load_file, load_from_bytes, load_raw_bytes, load_raw_bytes_detailed, save, save_file, save_file_with,
    save_raw_bytes, save_raw_bytes_with, save_to_bytes, save_with, ArrayFormat, ArrayInfo, LoadOptions, Loaded, ShapeSemantics,
    StorageType,
};
