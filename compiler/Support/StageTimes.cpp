//===- StageTimes.cpp - Where a compile spends its time --------------------===//
#include "compiler/Support/StageTimes.h"

#include <cstdio>
#include <ctime>
#include <sys/resource.h>

namespace attnc {

namespace {
thread_local StageTimes *installed = nullptr;

double seconds(const timeval &t) { return (double)t.tv_sec + (double)t.tv_usec * 1e-6; }

/// CPU seconds of this process and of the children it waited for.
double cpuSeconds() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return seconds(self.ru_utime) + seconds(self.ru_stime) + seconds(children.ru_utime) +
         seconds(children.ru_stime);
}

double wallSeconds() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
} // namespace

StageTimes::StageTimes() : outer(installed) { installed = this; }
StageTimes::~StageTimes() { installed = outer; }
StageTimes *StageTimes::current() { return installed; }

void StageTimes::add(const char *stage, double cpu, double wall) {
  for (Row &row : rows) {
    if (row.stage == stage) {
      row.cpu += cpu;
      row.wall += wall;
      return;
    }
  }
  rows.push_back({stage, cpu, wall});
}

std::string StageTimes::report() const {
  double cpu = 0, wall = 0;
  for (const Row &row : rows) {
    cpu += row.cpu;
    wall += row.wall;
  }
  std::string text = "attnc: time per stage        CPU s   wall s   share of CPU\n";
  char line[160];
  for (const Row &row : rows) {
    std::snprintf(line, sizeof line, "  %-27s %7.3f  %7.3f  %5.1f%%\n", row.stage.c_str(),
                  row.cpu, row.wall, cpu > 0 ? 100.0 * row.cpu / cpu : 0.0);
    text += line;
  }
  std::snprintf(line, sizeof line, "  %-27s %7.3f  %7.3f\n", "stages", cpu, wall);
  text += line;
  std::snprintf(line, sizeof line, "  %-27s %7.3f\n", "process so far (+ loading)", cpuSeconds());
  text += line;
  return text;
}

StageTimer::StageTimer(const char *stage) : stage(stage) {
  if (StageTimes::current()) {
    cpu0 = cpuSeconds();
    wall0 = wallSeconds();
  }
}

StageTimer::~StageTimer() {
  if (StageTimes *times = StageTimes::current())
    times->add(stage, cpuSeconds() - cpu0, wallSeconds() - wall0);
}

} // namespace attnc
