#include "planner/spec/scenario_io.h"

#include <filesystem>

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "base/atomic_file.h"

namespace megascale {
namespace {

// Collects the first parse error with its position (protobuf reports 0-based lines and columns).
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!has_error_) {
      has_error_ = true;
      text_ = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) +
              ": " + message;
    }
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  bool has_error() const { return has_error_; }
  const std::string& text() const { return text_; }

 private:
  bool has_error_ = false;
  std::string text_;
};

}  // namespace

Result<Scenario> ParseScenario(const std::string& text, const std::string& origin) {
  Scenario scenario;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &scenario)) {
    return Status::InvalidInput("malformed scenario " + origin + ": " +
                                (errors.has_error() ? errors.text() : "unparsable text") +
                                " (the format is protobuf text format; see README 'Scenario format')");
  }
  return scenario;
}

Result<Scenario> LoadScenario(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::BadField("scenario", "'" + path + "'", "is a folder, not a scenario file");
  }
  auto text = ReadFile(path);
  if (!text.ok()) {
    return Status::NotFound("scenario file '" + path + "' cannot be read: it is missing or unreadable");
  }
  MS_ASSIGN_OR_RETURN(Scenario scenario, ParseScenario(*text, "'" + path + "'"));
  ClusterSpec* cluster = scenario.mutable_cluster();
  if (!cluster->calibration_file().empty() && !cluster->has_calibration()) {
    std::string file = cluster->calibration_file();
    const size_t slash = path.rfind('/');
    if (file[0] != '/' && slash != std::string::npos) file = path.substr(0, slash + 1) + file;
    MS_ASSIGN_OR_RETURN(*cluster->mutable_calibration(), LoadCalibration(file, "cluster.calibration_file"));
  }
  return scenario;
}

Result<DeviceCalibration> LoadCalibration(const std::string& path, const std::string& field) {
  auto text = ReadFile(path);
  if (!text.ok()) {
    return Status::BadField(field, "'" + path + "'",
                            "must name a readable calibration file (write one with `megascale calibrate`)");
  }
  DeviceCalibration calibration;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(*text, &calibration)) {
    return Status::BadField(field, "'" + path + "'",
                            "must be a DeviceCalibration in protobuf text format (" +
                                (errors.has_error() ? errors.text() : "unparsable text") + ")");
  }
  return calibration;
}

}  // namespace megascale
