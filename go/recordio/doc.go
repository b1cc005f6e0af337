// Package recordio reads and writes RecordIO files in the format of the
// RecordIO library that PaddlePaddle's Go master used, byte for byte.
//
// A file is a sequence of chunks with no file header or footer. Every integer
// is a little-endian uint32. A chunk is a 20-byte header followed by its
// payload:
//
//	offset 0   magic         0x01020304
//	offset 4   checksum      CRC-32 (IEEE) of the payload as stored
//	offset 8   compressor    0 none, 1 snappy (framed), 2 gzip
//	offset 12  payload size  bytes of the stored payload
//	offset 16  record count
//	offset 20  payload
//
// Uncompressed, the payload holds each record as its length followed by its
// bytes. Snappy payloads use the framed (stream) snappy format, each chunk
// starting with its own stream identifier; gzip payloads are RFC 1952.
//
// Example writes a file, indexes it and scans some of its chunks;
// ExampleScanRecords reads a range of records.
//
// What the package promises:
//   - Writer output is identical to the reference writer's for the none and
//     snappy compressors (same chunk boundaries, same bytes).
//   - Indexing (ScanIndex, IndexFile) reads only the 20-byte headers and seeks
//     past payloads, so its cost grows with the number of chunks, not bytes.
//   - Every chunk read is verified: magic, checksum, decompression and record
//     framing. Each failure is an *Error naming the file, the chunk number and
//     the chunk's byte offset; errors.Is matches a corruption against its
//     sentinel (ErrBadMagic, ErrTruncated, ...) and an I/O failure against the
//     underlying error.
//   - Every open of a file (OpenFile, OpenFileIn, and through them IndexFile,
//     ScanFiles and the Scanner) is made with O_NONBLOCK, so it never waits
//     (for a FIFO's writer, a terminal's carrier), and yields only a regular
//     file, checked on the open descriptor: a FIFO, device, socket or
//     directory is refused with an error wrapping ErrNotRegular.
//   - Errors of indexing never show bytes of the file beyond the sizes and
//     counts of a header whose magic matched: a file that is not RecordIO is
//     reported as such, with its path and offset, not with what it holds.
//   - Corrupt input never panics and never makes the reader allocate more than
//     a small multiple of the bytes actually present in the file (bounded by
//     MaxChunkBytes after decompression), whatever a header claims.
package recordio
