#include "traces/format/trace_io.h"

#include <cstdint>

#include <google/protobuf/io/coded_stream.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace megascale {
namespace {

using google::protobuf::io::CodedOutputStream;

// Records are handed to the stream in blocks this large: one write per ~1 MiB instead of per event.
constexpr size_t kWriteBlock = 1 << 20;
// The reader's window on the file; a record larger than this grows it.
constexpr size_t kReadBlock = 1 << 20;
// No honest record comes near this (an event is ~60 bytes, a header a few hundred): a size prefix
// above it means the bytes are not a trace.
constexpr uint64_t kMaxRecordBytes = 64u << 20;
constexpr int kMaxVarintBytes = 10;

std::string At(const std::string& path, int64_t offset) {
  return "trace '" + path + "': record at byte offset " + std::to_string(offset);
}

}  // namespace

Result<std::unique_ptr<TraceFileWriter>> TraceFileWriter::Create(const std::string& path) {
  std::unique_ptr<TraceFileWriter> writer(new TraceFileWriter(path));
  MS_RETURN_IF_ERROR(writer->file_.Open(/*binary=*/true));
  writer->buffer_.reserve(kWriteBlock + 4096);
  return writer;
}

// A TraceRecord whose only field is the oneof member `field` serializes as that field's tag, the
// member's length and the member's bytes. Writing that directly is byte-identical to building the
// record, and saves copying every event into a TraceRecord.
void TraceFileWriter::Append(int field, const google::protobuf::MessageLite& body) {
  if (closed_) return;
  if (records_ == 0) header_first_ = (field == TraceRecord::kHeaderFieldNumber);
  const uint32_t body_size = static_cast<uint32_t>(body.ByteSizeLong());
  const uint32_t tag = (static_cast<uint32_t>(field) << 3) | 2;  // wire type 2: length-delimited
  const uint32_t record_size = CodedOutputStream::VarintSize32(tag) +
                               CodedOutputStream::VarintSize32(body_size) + body_size;
  const size_t old = buffer_.size();
  buffer_.resize(old + CodedOutputStream::VarintSize32(record_size) + record_size);
  auto* p = reinterpret_cast<uint8_t*>(&buffer_[old]);
  p = CodedOutputStream::WriteVarint32ToArray(record_size, p);
  p = CodedOutputStream::WriteVarint32ToArray(tag, p);
  p = CodedOutputStream::WriteVarint32ToArray(body_size, p);
  body.SerializeWithCachedSizesToArray(p);
  ++records_;
  if (buffer_.size() >= kWriteBlock) FlushBuffer();
}

void TraceFileWriter::Write(const TraceRecord& record) {
  switch (record.body_case()) {
    case TraceRecord::kHeader: Append(TraceRecord::kHeaderFieldNumber, record.header()); break;
    case TraceRecord::kEvent: Append(TraceRecord::kEventFieldNumber, record.event()); break;
    case TraceRecord::kStatus: Append(TraceRecord::kStatusFieldNumber, record.status()); break;
    case TraceRecord::kEnd: Append(TraceRecord::kEndFieldNumber, record.end()); break;
    case TraceRecord::BODY_NOT_SET: break;
  }
}

void TraceFileWriter::FlushBuffer() {
  file_.stream().write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
}

void TraceFileWriter::OnHeader(const TraceHeader& h) { Append(TraceRecord::kHeaderFieldNumber, h); }
void TraceFileWriter::OnEvent(const TraceEvent& e) { Append(TraceRecord::kEventFieldNumber, e); }
void TraceFileWriter::OnStatus(const RankStatus& s) { Append(TraceRecord::kStatusFieldNumber, s); }
void TraceFileWriter::OnEnd(const RunEnd& e) { Append(TraceRecord::kEndFieldNumber, e); }

Status TraceFileWriter::OnStepDone(int step) {
  if (closed_) return close_status_;
  FlushBuffer();
  file_.stream().flush();
  if (!file_.stream()) {
    return Status::IoError("writing trace '" + file_.path() + "' failed after step " + std::to_string(step) + ": " +
                           std::strerror(errno) + " (disk full?)");
  }
  return Status::Ok();
}

Status TraceFileWriter::Close() {
  if (closed_) return close_status_;
  closed_ = true;
  if (!header_first_) {
    // A reader would reject the file, so none is written (the destructor drops the temporary).
    close_status_ = Status::InvalidInput("trace '" + file_.path() +
                                         "': the first record must be a header (call OnHeader first); "
                                         "nothing was written");
    return close_status_;
  }
  FlushBuffer();
  close_status_ = file_.Commit();
  return close_status_;
}

Result<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path) {
  std::unique_ptr<TraceReader> reader(new TraceReader());
  reader->path_ = path;
  reader->in_.open(path, std::ios::in | std::ios::binary);
  if (!reader->in_) {
    return Status::NotFound("cannot read trace '" + path + "': " + std::strerror(errno));
  }
  reader->buf_.resize(kReadBlock);
  TraceRecord first;
  MS_ASSIGN_OR_RETURN(bool got, reader->Next(&first));
  if (!got) {
    return Status::InvalidInput("trace '" + path + "' is empty: a trace starts with a header record");
  }
  if (!first.has_header()) {
    return Status::InvalidInput(At(path, 0) + " is not a header: a trace starts with one "
                                "(is this a megascale trace?)");
  }
  reader->header_ = std::move(*first.mutable_header());
  return reader;
}

Status TraceReader::Fill(size_t need, bool* available) {
  if (end_ - pos_ >= need) {
    *available = true;
    return Status::Ok();
  }
  // Slide the unparsed tail to the front, then read after it.
  std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
  end_ -= pos_;
  pos_ = 0;
  if (buf_.size() < need) buf_.resize(need);
  while (end_ < need && !eof_) {
    in_.read(buf_.data() + end_, static_cast<std::streamsize>(buf_.size() - end_));
    const std::streamsize got = in_.gcount();
    end_ += static_cast<size_t>(got);
    if (in_.bad()) {
      return Status::IoError("error while reading trace '" + path_ + "' near byte offset " +
                             std::to_string(offset_) + ": " + std::strerror(errno));
    }
    if (!in_) eof_ = true;  // a short read sets failbit at the end of the file
  }
  *available = end_ - pos_ >= need;
  return Status::Ok();
}

namespace {

// The step of a serialized TraceRecord holding an event, read from its wire format without parsing
// it (TraceEvent.step is field 2, a varint; absent means 0); -1 when the record is no event or the
// bytes are not what they should be (then the caller parses them, and reports what is wrong).
int PeekEventStep(const uint8_t* p, const uint8_t* end) {
  auto varint = [&](uint64_t* v) {
    *v = 0;
    for (int shift = 0; p < end && shift < 64; shift += 7) {
      const uint8_t b = *p++;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  };
  uint64_t tag = 0, len = 0;
  if (!varint(&tag) || tag != ((2u << 3) | 2u) || !varint(&len) || len > static_cast<uint64_t>(end - p)) return -1;
  const uint8_t* event_end = p + len;
  int64_t step = 0;
  end = event_end;
  while (p < end) {
    uint64_t v = 0;
    if (!varint(&tag)) return -1;
    switch (tag & 7) {
      case 0:
        if (!varint(&v)) return -1;
        if ((tag >> 3) == 2) step = static_cast<int64_t>(v);
        break;
      case 1: p += 8; break;
      case 2:
        if (!varint(&v) || v > static_cast<uint64_t>(end - p)) return -1;
        p += v;
        break;
      case 5: p += 4; break;
      default: return -1;
    }
  }
  return p == end && step >= 0 && step <= INT32_MAX ? static_cast<int>(step) : -1;
}

}  // namespace

Result<bool> TraceReader::Next(TraceRecord* record, const TraceSink* wanted) {
  bool available = false;
  MS_RETURN_IF_ERROR(Fill(1, &available));
  if (!available) return false;  // a clean end: between records
  MS_RETURN_IF_ERROR(Fill(kMaxVarintBytes, &available));
  const size_t window = end_ - pos_;
  const auto* p = reinterpret_cast<const uint8_t*>(buf_.data() + pos_);
  uint64_t size = 0;
  int prefix = 0;
  bool complete = false;
  for (; prefix < kMaxVarintBytes && static_cast<size_t>(prefix) < window; ++prefix) {
    size |= static_cast<uint64_t>(p[prefix] & 0x7f) << (7 * prefix);
    if ((p[prefix] & 0x80) == 0) {
      complete = true;
      ++prefix;
      break;
    }
  }
  if (!complete) {
    torn_ = eof_ && window < static_cast<size_t>(kMaxVarintBytes);
    return Status::InvalidInput(At(path_, offset_) + ": truncated or corrupt size prefix "
                                "(the file ends or the varint is malformed)");
  }
  if (size > kMaxRecordBytes) {
    return Status::InvalidInput(At(path_, offset_) + ": size prefix " + std::to_string(size) +
                                " bytes exceeds the limit of " + std::to_string(kMaxRecordBytes) +
                                " (corrupt file)");
  }
  MS_RETURN_IF_ERROR(Fill(prefix + size, &available));
  if (!available) {
    torn_ = true;
    return Status::InvalidInput(At(path_, offset_) + ": truncated: it declares " +
                                std::to_string(size) + " bytes but the file ends after " +
                                std::to_string(end_ - pos_ - prefix));
  }
  const char* body = buf_.data() + pos_ + prefix;
  if (wanted) {
    const auto* b = reinterpret_cast<const uint8_t*>(body);
    const int step = PeekEventStep(b, b + size);
    if (step >= 0 && !wanted->WantsStep(step)) {
      record->Clear();
      pos_ += prefix + size;
      offset_ += static_cast<int64_t>(prefix + size);
      return true;
    }
  }
  if (!record->ParseFromArray(body, static_cast<int>(size)) ||
      record->body_case() == TraceRecord::BODY_NOT_SET) {
    return Status::InvalidInput(At(path_, offset_) + ": corrupt: its " + std::to_string(size) +
                                " bytes are not a TraceRecord");
  }
  if (record->has_header() && offset_ != 0) {
    return Status::InvalidInput(At(path_, offset_) + ": a second header (only the first record "
                                "may be one)");
  }
  pos_ += prefix + size;
  offset_ += static_cast<int64_t>(prefix + size);
  return true;
}

Result<Trace> ReadTrace(const std::string& path) {
  MS_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path));
  Trace trace;
  trace.header = reader->header();
  TraceRecord record;
  while (true) {
    MS_ASSIGN_OR_RETURN(bool got, reader->Next(&record));
    if (!got) break;
    switch (record.body_case()) {
      case TraceRecord::kEvent: trace.events.push_back(record.event()); break;
      case TraceRecord::kStatus: trace.statuses.push_back(record.status()); break;
      case TraceRecord::kEnd:
        trace.has_end = true;
        trace.end = record.end();
        break;
      default: break;  // Next() rejects anything else
    }
  }
  return trace;
}

namespace {

// Parsing and the sink run side by side: a helper thread parses records into one batch while the
// caller's thread hands the other to the sink (a 12,288-rank trace's 30 M records parse in about
// as long as the diagnosis takes to consume them). Records reach the sink in file order.
class ReplayPipe {
 public:
  ReplayPipe(TraceReader* reader, TraceSink* sink) : reader_(reader), sink_(sink) {}

  Status Run() {
    std::thread parser([this] { Parse(); });
    Status result = Drain();
    parser.join();
    return result;
  }

 private:
  static constexpr size_t kBatch = 4096;
  struct Batch {
    std::vector<TraceRecord> records = std::vector<TraceRecord>(kBatch);
    size_t count = 0;
    bool full = false;   // filled by the parser, not yet drained
    bool last = false;   // the file ended (or failed) here
    Status status;
  };

  // The helper thread: fills the batches in turn until the file ends or fails, or the consumer
  // stops.
  void Parse() {
    for (int b = 0;; b ^= 1) {
      Batch& batch = batches_[b];
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !batch.full || stop_; });
        if (stop_) return;
      }
      batch.count = 0;
      bool last = false;
      Status status;
      while (batch.count < kBatch) {
        Result<bool> got = reader_->Next(&batch.records[batch.count], sink_->FiltersSteps() ? sink_ : nullptr);
        if (!got.ok() || !*got) {
          if (!got.ok()) status = got.status();
          last = true;
          break;
        }
        ++batch.count;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        batch.status = status;
        batch.last = last;
        batch.full = true;
      }
      cv_.notify_all();
      if (last) return;
    }
  }

  // The caller's thread: hands each filled batch to the sink, in turn, until the last; its status
  // is the replay's.
  Status Drain() {
    for (int b = 0;; b ^= 1) {
      Batch& batch = batches_[b];
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return batch.full; });
      }
      for (size_t i = 0; i < batch.count; ++i) {
        const TraceRecord& record = batch.records[i];
        switch (record.body_case()) {
          case TraceRecord::kEvent: sink_->OnEvent(record.event()); break;
          case TraceRecord::kStatus: sink_->OnStatus(record.status()); break;
          case TraceRecord::kEnd: sink_->OnEnd(record.end()); break;
          default: break;  // an event the sink does not want, skipped unparsed
        }
      }
      const bool last = batch.last;
      const Status status = batch.status;
      {
        std::lock_guard<std::mutex> lock(mu_);
        batch.full = false;
        if (last) stop_ = true;
      }
      cv_.notify_all();
      if (last) return status;
    }
  }

  TraceReader* reader_;
  TraceSink* sink_;
  Batch batches_[2];
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // the consumer gave up
};

}  // namespace

Status ReplayTrace(const std::string& path, TraceSink* sink) {
  MS_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path));
  sink->OnHeader(reader->header());
  return ReplayPipe(reader.get(), sink).Run();
}

}  // namespace megascale
