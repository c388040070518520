//===- Sema.cpp - From parsed kernels to checked KernelSpecs --------------===//
//
// One resolver per field, listed in kFields with the forms it accepts (the
// table messages quote). Resolvers run in table order, so later fields may
// read earlier ones (the default scale reads key_dim and score). Cross-field
// rules run last, and only when the fields they relate resolved cleanly, so
// one mistake gives one error.
//
//===----------------------------------------------------------------------===//
#include "compiler/Frontend/Sema.h"

#include "compiler/Frontend/ASTDump.h"
#include "compiler/Frontend/ExprText.h"
#include "compiler/Frontend/Limits.h"
#include "compiler/Frontend/SemaExpr.h"
#include "compiler/Frontend/Signature.h"
#include "compiler/Frontend/Suggest.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace attnc {

namespace {

class KernelSema;
using Resolver = bool (KernelSema::*)(const FieldAST *field);

struct FieldInfo {
  const char *name;
  const char *forms;
  Resolver resolve; // called with nullptr when the field is absent
};

extern const FieldInfo kFields[];
extern const size_t kNumFields;

const char *const kDropoutMessage =
    "dropout is not supported: attnc's kernels are deterministic ('backward = true' trains "
    "without it)";

const std::vector<std::string> kCKeywords = {
    "auto",     "break",    "case",     "char",   "const",    "continue", "default",
    "do",       "double",   "else",     "enum",   "extern",   "float",    "for",
    "goto",     "if",       "inline",   "int",    "long",     "register", "restrict",
    "return",   "short",    "signed",   "sizeof", "static",   "struct",   "switch",
    "typedef",  "union",    "unsigned", "void",   "volatile", "while",    "_Bool",
    "_Complex", "_Imaginary", "_Alignas", "_Alignof", "_Atomic", "_Generic",
    "_Noreturn", "_Static_assert", "_Thread_local", "bool", "true", "false"};

std::string powerOfTwoText(int64_t value) {
  int bits = 0;
  while ((int64_t(1) << bits) < value && bits < 62)
    ++bits;
  if ((int64_t(1) << bits) == value)
    return " = 2^" + std::to_string(bits);
  if (value == INT32_MAX)
    return " = 2^31-1";
  return "";
}

/// Resolves one kernel; see analyzeKernel.
class KernelSema {
public:
  KernelSema(const KernelAST &kernel, DiagnosticEngine &diag) : kernel_(kernel), diag_(diag) {}

  std::optional<KernelSpec> run(const std::vector<const FieldAST *> &overrides) {
    unsigned errorsBefore = diag_.errorCount();
    spec_.name = kernel_.name;
    spec_.loc = kernel_.loc;
    collectFields(overrides);
    for (size_t f = 0; f < kNumFields; ++f) {
      const FieldInfo &info = kFields[f];
      auto it = fields_.find(info.name);
      const FieldAST *field = it == fields_.end() ? nullptr : it->second;
      if (field)
        spec_.givenFields.push_back({info.name, field->valueLoc});
      if (!(this->*info.resolve)(field))
        failed_.insert(info.name);
      if (std::string(info.name) == "outputs")
        checkInputs(); // after `project` (for 'M'), before the expressions
    }
    checkCrossFieldRules();
    if (diag_.errorCount() != errorsBefore)
      return std::nullopt;
    return std::move(spec_);
  }

  // Resolvers, one per field (kFields).
  bool resolveHeads(const FieldAST *f) { return dimField(f, 1, spec_.heads); }
  bool resolveKvHeads(const FieldAST *f) {
    return dimField(f, spec_.heads, spec_.kvHeads);
  }
  bool resolveHeadDim(const FieldAST *f) {
    if (!f) {
      diag_.error(kernel_.loc, "kernel " + quote(kernel_.name) +
                                   " has no 'head_dim'; it is required (e.g. 'head_dim = 64')");
      return false;
    }
    return dimField(f, 0, spec_.headDim);
  }
  bool resolveKeyDim(const FieldAST *f) {
    return dimField(f, spec_.headDim, spec_.keyDim) && (f || spec_.headDim);
  }
  bool resolveValueDim(const FieldAST *f) {
    return dimField(f, spec_.headDim, spec_.valueDim) && (f || spec_.headDim);
  }
  bool resolveBatch(const FieldAST *f) {
    if (f && singleValue(*f) && f->value->kind == ExprKind::Name && f->value->name == "packed") {
      spec_.packed = true;
      return true;
    }
    return sizeField(f, "batch", spec_.batch);
  }
  bool resolveSeqQ(const FieldAST *f) { return sizeField(f, "seq_q", spec_.seqQ); }
  bool resolveSeqK(const FieldAST *f) { return sizeField(f, "seq_k", spec_.seqK); }

  bool resolveProject(const FieldAST *f) {
    static const std::vector<std::pair<std::string, ProjectKind>> kinds = {
        {"none", ProjectKind::None},       {"self_qkv", ProjectKind::SelfQKV},
        {"qkv", ProjectKind::QKV},         {"qkv_out", ProjectKind::QKVOut},
        {"self_qkv_out", ProjectKind::SelfQKVOut}};
    return enumField(f, "project", kinds, spec_.project);
  }
  bool resolveModelDim(const FieldAST *f) {
    if (!f)
      return true; // required with `project`: checked with the cross-field rules
    return dimField(f, 0, spec_.modelDim);
  }
  bool resolveKvModelDim(const FieldAST *f) {
    if (!f)
      return true;
    return dimField(f, 0, spec_.kvModelDim);
  }
  /// `true`, `false`, or the projections that have one: `proj_bias = q, v, o`.
  /// backward = true | false (docs/language.md, training).
  bool resolveBackward(const FieldAST *f) {
    if (!f)
      return true;
    if (!singleValue(*f))
      return false;
    if (f->value->kind != ExprKind::BoolLit)
      return badValue(*f, {"true", "false"});
    spec_.backward = f->value->boolValue;
    return true;
  }

  bool resolveProjBias(const FieldAST *f) {
    if (!f)
      return true;
    if (f->value->kind == ExprKind::BoolLit && f->moreValues.empty()) {
      spec_.projBias = f->value->boolValue ? ProjBias::all() : ProjBias{};
      return true;
    }
    if (f->separator == '&')
      return singleValue(*f);
    std::vector<const Expr *> items{f->value.get()};
    for (const ExprPtr &item : f->moreValues)
      items.push_back(item.get());
    for (const Expr *item : items) {
      bool *flag = nullptr;
      if (item->kind == ExprKind::Name) {
        const std::string &n = item->name;
        flag = n == "q" ? &spec_.projBias.q : n == "k" ? &spec_.projBias.k
               : n == "v" ? &spec_.projBias.v : n == "o" ? &spec_.projBias.o : nullptr;
      }
      if (!flag) {
        diag_.error(item->loc, "invalid value " + quote(exprText(*item)) +
                                   " for 'proj_bias'; expected " + acceptedForms("proj_bias"));
        return false;
      }
      if (*flag) {
        diag_.error(item->loc, "projection " + quote(item->name) +
                                   " appears twice in 'proj_bias'");
        return false;
      }
      *flag = true;
      biasListsO_ = biasListsO_ || flag == &spec_.projBias.o;
    }
    return true;
  }
  bool resolvePositional(const FieldAST *f) {
    if (f && singleValue(*f) && f->value->kind == ExprKind::Call && f->value->name == "rotary")
      return resolveRotary(*f->value);
    static const std::vector<std::pair<std::string, PositionalKind>> kinds = {
        {"none", PositionalKind::None},
        {"sinusoidal", PositionalKind::Sinusoidal},
        {"rotary", PositionalKind::Rotary}};
    return enumField(f, "positional", kinds, spec_.positional);
  }
  bool resolveRotary(const Expr &call);
  /// cache = none | contiguous | paged(block = N).
  bool resolveCache(const FieldAST *f) {
    if (f && singleValue(*f) && f->value->kind == ExprKind::Call && f->value->name == "paged")
      return resolvePaged(*f->value);
    static const std::vector<std::pair<std::string, CacheKind>> kinds = {
        {"none", CacheKind::None}, {"contiguous", CacheKind::Contiguous}};
    if (f && singleValue(*f) && f->value->kind == ExprKind::Name && f->value->name == "paged") {
      diag_.error(f->value->loc, "'paged' needs its block size: 'cache = paged(block = 16)'");
      return false;
    }
    return enumField(f, "cache", kinds, spec_.cache.kind);
  }
  bool resolvePaged(const Expr &call) {
    const Expr *block = call.operands.size() == 1 ? call.operands[0].get() : nullptr;
    if (!block || block->argName != "block") {
      diag_.error(call.loc, "'paged' takes one argument, its block size: 'paged(block = 16)'");
      return false;
    }
    if (block->kind != ExprKind::IntLit || block->intValue < 1 ||
        block->intValue > limits::kMaxCacheBlock) {
      diag_.error(block->loc, "the block of 'paged' must be an integer between 1 and " +
                                  std::to_string(limits::kMaxCacheBlock));
      return false;
    }
    spec_.cache = {CacheKind::Paged, block->intValue};
    return true;
  }
  bool resolveLayout(const FieldAST *f) {
    static const std::vector<std::pair<std::string, Layout>> kinds = {{"bhsd", Layout::BHSD},
                                                                      {"bshd", Layout::BSHD}};
    return enumField(f, "layout", kinds, spec_.layout);
  }
  /// dtype, kv_dtype: f32, f16 or bf16; kv_dtype defaults to dtype.
  bool storageField(const FieldAST *f, ElemType &out) {
    const std::vector<std::pair<std::string, ElemType>> kinds = {
        {"f32", ElemType::F32}, {"f16", ElemType::F16}, {"bf16", ElemType::BF16}};
    return enumField(f, f ? f->name.c_str() : "", kinds, out);
  }
  bool resolveDtype(const FieldAST *f) { return storageField(f, spec_.dtype); }
  bool resolveKvDtype(const FieldAST *f) {
    spec_.kvDtype = spec_.dtype;
    return storageField(f, spec_.kvDtype);
  }
  bool resolveOutputs(const FieldAST *f);
  bool resolveScore(const FieldAST *f);
  bool resolveScale(const FieldAST *f);
  bool resolveSoftcap(const FieldAST *f);
  bool resolveBias(const FieldAST *f);
  bool resolveMask(const FieldAST *f);

private:
  void collectFields(const std::vector<const FieldAST *> &overrides);
  void checkInputs();
  void checkCrossFieldRules();
  void checkArgumentSizes();
  void checkPackedRules();
  void checkCacheRules();
  void checkBackwardRules();
  bool failed(const char *field) const { return failed_.count(field) != 0; }
  SourceLoc locOf(const char *field) const {
    auto it = fields_.find(field);
    return it == fields_.end() ? kernel_.loc : it->second->valueLoc;
  }
  bool given(const char *field) const { return fields_.count(field) != 0; }
  ExprScope scope(ExprContext context, const char *field) const {
    return {context, field, &spec_.inputs, &spec_};
  }

  /// Reports a second value of a single-valued field.
  bool singleValue(const FieldAST &f) {
    if (f.moreValues.empty())
      return true;
    const Expr &extra = *f.moreValues.front();
    diag_.error(extra.loc, f.separator == '&'
                               ? "'&' joins masks and is only allowed in 'mask'"
                               : "field " + quote(f.name) +
                                     " takes one value; ',' only separates the items of "
                                     "'outputs'");
    return false;
  }

  /// "invalid value 'x' for 'layout'; expected one of: bhsd, bshd; did you mean ...?"
  bool badValue(const FieldAST &f, const std::vector<std::string> &words) {
    const Expr &v = *f.value;
    std::string message = "invalid value " + quote(f.text) + " for " + quote(f.name) +
                          "; expected " + acceptedForms(f.name);
    if (v.kind == ExprKind::Name)
      message += didYouMean(v.name, words);
    diag_.error(v.loc, message);
    return false;
  }

  /// An integer in [1, max]: heads, kv_heads, head_dim, key_dim, value_dim, model_dim.
  bool dimField(const FieldAST *f, int64_t defaultValue, int64_t &out) {
    out = defaultValue;
    if (!f)
      return true;
    return integerValue(*f, limits::kMaxDim, out);
  }

  bool integerValue(const FieldAST &f, int64_t max, int64_t &out) {
    if (!singleValue(f))
      return false;
    const Expr &v = *f.value;
    bool negative = v.kind == ExprKind::Unary && v.unaryOp == UnaryOp::Neg &&
                    v.operands[0]->kind == ExprKind::IntLit;
    if (v.kind != ExprKind::IntLit && !negative)
      return badValue(f, {});
    if (negative || v.intValue < 1) {
      diag_.error(v.loc, quote(f.name) + " must be an integer >= 1, but it is " +
                             quote(f.text));
      return false;
    }
    if (v.intValue > max) {
      diag_.error(v.loc, quote(f.name) + " is too large: " + std::to_string(v.intValue) +
                             " (the maximum is " + std::to_string(max) +
                             powerOfTwoText(max) + ")");
      return false;
    }
    out = v.intValue;
    return true;
  }

  /// batch, seq_q, seq_k: an integer, `dynamic`, or (seq_k) `seq_q`.
  bool sizeField(const FieldAST *f, const char *name, SizeSpec &out) {
    out = SizeSpec{};
    if (!f)
      return true;
    if (!singleValue(*f))
      return false;
    const Expr &v = *f->value;
    bool isSeqK = std::string(name) == "seq_k";
    if (v.kind == ExprKind::Name) {
      if (v.name == "dynamic")
        return true;
      if (isSeqK && v.name == "seq_q") {
        out.kind = SizeSpec::SameAsSeqQ;
        out.value = spec_.seqQ.value;
        return true;
      }
      std::vector<std::string> words = {"dynamic"};
      if (isSeqK)
        words.push_back("seq_q");
      return badValue(*f, words);
    }
    int64_t value = 0;
    if (!integerValue(*f, limits::kMaxSeq, value))
      return false;
    out.kind = SizeSpec::Fixed;
    out.value = value;
    return true;
  }

  template <typename Enum>
  bool enumField(const FieldAST *f, const char *name,
                 const std::vector<std::pair<std::string, Enum>> &kinds, Enum &out) {
    (void)name;
    if (!f)
      return true;
    if (!singleValue(*f))
      return false;
    const Expr &v = *f->value;
    std::vector<std::string> words;
    for (const auto &kind : kinds) {
      words.push_back(kind.first);
      if (v.kind == ExprKind::Name && v.name == kind.first) {
        out = kind.second;
        return true;
      }
    }
    return badValue(*f, words);
  }

  bool maskTerm(const Expr &term, SourceLoc start, std::map<MaskKind, SourceLoc> &seen);
  bool maskWidth(const Expr &term, MaskTerm &result);
  using MaskGroups = std::vector<std::vector<int>>;
  std::optional<MaskGroups> maskGroups(const Expr &e, std::map<MaskKind, SourceLoc> &seen);
  bool biasListsO_ = false;   // proj_bias lists `o` (needs an output projection)
  bool maskHasUnion_ = false; // the mask has '|': a repeated term is the same term
  int lastMaskTerm_ = -1;     // the index in spec_.masks of the last term resolved

  const KernelAST &kernel_;
  DiagnosticEngine &diag_;
  KernelSpec spec_;
  std::map<std::string, const FieldAST *> fields_;
  std::set<std::string> failed_;
};

void KernelSema::collectFields(const std::vector<const FieldAST *> &overrides) {
  const std::vector<std::string> &known = knownFieldNames();
  for (const FieldAST &field : kernel_.fields) {
    if (field.name == "dropout") {
      diag_.error(field.nameLoc, kDropoutMessage);
      continue;
    }
    if (std::find(known.begin(), known.end(), field.name) == known.end()) {
      std::string suggestion = closestMatch(field.name, known);
      diag_.error(field.nameLoc,
                  "unknown field " + quote(field.name) +
                      (suggestion.empty() ? " (fields: " + joinList(known) + ")"
                                          : "; did you mean '" + suggestion + "'?"));
      continue;
    }
    auto [it, inserted] = fields_.insert({field.name, &field});
    if (!inserted) {
      diag_.error(field.nameLoc, "field " + quote(field.name) + " is given twice");
      diag_.note(it->second->nameLoc, "first defined here");
    }
  }
  for (const FieldAST *field : overrides)
    fields_[field->name] = field;
}

void KernelSema::checkInputs() {
  std::map<std::string, SourceLoc> seen;
  const std::vector<std::string> &reserved = reservedInputNames();
  const std::vector<std::string> &sizes = sizeNames();
  if (kernel_.inputs.size() > limits::kMaxInputs) {
    diag_.error(kernel_.inputs[limits::kMaxInputs].loc,
                "too many inputs (the maximum is " + std::to_string(limits::kMaxInputs) + ")");
    return;
  }
  bool ok = true;
  for (const InputAST &input : kernel_.inputs) {
    if (std::find(reserved.begin(), reserved.end(), input.name) != reserved.end()) {
      diag_.error(input.loc, "input name " + quote(input.name) +
                                 " is reserved (an index variable, size, function or "
                                 "kernel argument); choose another name");
      ok = false;
    } else if (isCKeyword(input.name)) {
      diag_.error(input.loc, "input name " + quote(input.name) +
                                 " is a C keyword and cannot name an argument");
      ok = false;
    }
    auto [it, inserted] = seen.insert({input.name, input.loc});
    if (!inserted) {
      diag_.error(input.loc, "input " + quote(input.name) + " is declared twice");
      diag_.note(it->second, "first defined here");
      ok = false;
    }
    for (const DimAST &dim : input.dims) {
      if (dim.sizeName.empty()) {
        if (dim.value < 1 || dim.value > limits::kMaxSeq) {
          diag_.error(dim.loc, "dimension " + std::to_string(dim.value) + " of input " +
                                   quote(input.name) + " must be between 1 and " +
                                   std::to_string(limits::kMaxSeq));
          ok = false;
        }
      } else if (std::find(sizes.begin(), sizes.end(), dim.sizeName) == sizes.end()) {
        diag_.error(dim.loc, "unknown size " + quote(dim.sizeName) + " in the shape of input " +
                                 quote(input.name) + "; sizes are B, H, G, Lq, Lk, D, Dk, Dv, M" +
                                 didYouMean(dim.sizeName, sizes));
        ok = false;
      } else if (dim.sizeName == "M" && spec_.project == ProjectKind::None) {
        diag_.error(dim.loc, "size 'M' (model_dim) only exists with 'project'");
        ok = false;
      }
    }
  }
  // Expressions may still use the inputs after an error here; keep them all.
  for (const InputAST &input : kernel_.inputs)
    spec_.inputs.push_back(input);
  if (!ok)
    failed_.insert("input");
}

bool KernelSema::resolveOutputs(const FieldAST *f) {
  if (!f)
    return true;
  if (f->separator == '&') {
    diag_.error(f->moreValues.front()->loc,
                "'&' joins masks; separate outputs with ',' (e.g. 'outputs = out, lse')");
    return false;
  }
  std::vector<const Expr *> items = {f->value.get()};
  for (const ExprPtr &e : f->moreValues)
    items.push_back(e.get());
  std::map<std::string, SourceLoc> seen;
  bool ok = true;
  for (size_t n = 0; n < items.size(); ++n) {
    const Expr &item = *items[n];
    bool known = item.kind == ExprKind::Name &&
                 (item.name == "out" || item.name == "weights" || item.name == "lse");
    if (!known) {
      std::string message = "invalid output; expected " + std::string(acceptedForms("outputs"));
      if (item.kind == ExprKind::Name)
        message = "unknown output " + quote(item.name) + "; expected " +
                  acceptedForms("outputs") + didYouMean(item.name, {"out", "weights", "lse"});
      diag_.error(item.loc, message);
      ok = false;
      continue;
    }
    if (n == 0 && item.name != "out") {
      diag_.error(item.loc, "'outputs' must start with 'out' (e.g. 'outputs = out, " +
                                item.name + "')");
      ok = false;
    }
    if (n > 0 && item.name == "out") {
      diag_.error(item.loc, "'out' must come first in 'outputs'");
      ok = false;
    }
    auto [it, inserted] = seen.insert({item.name, item.loc});
    if (!inserted) {
      diag_.error(item.loc, "output " + quote(item.name) + " is listed twice");
      diag_.note(it->second, "first defined here");
      ok = false;
    }
    spec_.outputWeights |= item.name == "weights";
    spec_.outputLse |= item.name == "lse";
  }
  return ok;
}

bool KernelSema::resolveScore(const FieldAST *f) {
  if (!f)
    return true;
  if (!singleValue(*f))
    return false;
  const Expr &v = *f->value;
  // The named kinds are the rows of kScoreKinds that are not expressions.
  static const std::vector<std::string> words = [] {
    std::vector<std::string> names;
    for (const ScoreKindInfo &row : kScoreKinds)
      if (!row.isExpression)
        names.push_back(toString(row.kind));
    return names;
  }();
  ExprScope exprScope = scope(ExprContext::Score, "score");
  if (v.kind == ExprKind::Name) {
    std::optional<ScoreKind> named = parseScoreKind(v.name);
    if (named && !kindInfo(*named).takesHidden && !kindInfo(*named).isExpression) {
      spec_.score = *named;
      return true;
    }
    if (v.name == "additive") {
      diag_.error(v.loc, "'additive' needs its hidden size: 'additive(hidden = N)'");
      return false;
    }
    if (!isExpressionName(v.name, exprScope))
      return badValue(*f, words);
  }
  if (v.kind == ExprKind::Call && v.name == "additive") {
    if (v.operands.size() != 1 || v.operands[0]->argName != "hidden") {
      diag_.error(v.loc, "'additive' takes its hidden size as 'additive(hidden = N)'");
      return false;
    }
    const Expr &n = *v.operands[0];
    if (n.kind != ExprKind::IntLit || n.intValue < 1 || n.intValue > limits::kMaxDim) {
      diag_.error(n.loc, "the hidden size of 'additive' must be an integer between 1 and " +
                             std::to_string(limits::kMaxDim));
      return false;
    }
    spec_.score = ScoreKind::Additive;
    spec_.additiveHidden = n.intValue;
    return true;
  }
  ExprPtr expr = v.clone();
  ExprType type = checkExpr(*expr, exprScope, diag_);
  if (type == ExprType::Unknown)
    return false;
  if (type == ExprType::Bool) {
    diag_.error(f->valueLoc, "'score' must be a number, but this expression is a boolean");
    return false;
  }
  spec_.score = ScoreKind::Custom;
  spec_.scoreExpr = std::move(expr);
  return true;
}

bool KernelSema::resolveScale(const FieldAST *f) {
  if (!f) {
    // 1/sqrt(key_dim) for scaled_dot, else 1.
    spec_.scale = kindInfo(spec_.score).scaledByDefault && spec_.keyDim > 0
                      ? 1.0 / std::sqrt(double(spec_.keyDim))
                      : 1.0;
    return true;
  }
  if (!singleValue(*f))
    return false;
  ExprScope exprScope = scope(ExprContext::Constant, "scale");
  ExprPtr expr = f->value->clone();
  ExprType type = checkExpr(*expr, exprScope, diag_);
  if (type == ExprType::Unknown)
    return false;
  if (type == ExprType::Bool) {
    diag_.error(f->valueLoc, "'scale' must be a number, but this expression is a boolean");
    return false;
  }
  double value = 0;
  if (!evaluateConstant(*expr, f->valueLoc, exprScope, diag_, value))
    return false;
  spec_.scale = value;
  spec_.scaleExplicit = true;
  return true;
}

bool KernelSema::resolveSoftcap(const FieldAST *f) {
  if (!f)
    return true;
  if (!singleValue(*f))
    return false;
  ExprScope exprScope = scope(ExprContext::Constant, "softcap");
  ExprPtr expr = f->value->clone();
  ExprType type = checkExpr(*expr, exprScope, diag_);
  if (type == ExprType::Unknown)
    return false;
  double value = 0;
  if (type == ExprType::Bool) {
    diag_.error(f->valueLoc, "'softcap' must be a positive number, but this expression is "
                             "a boolean");
    return false;
  }
  if (!evaluateConstant(*expr, f->valueLoc, exprScope, diag_, value))
    return false;
  if (!(value > 0)) {
    diag_.error(f->valueLoc, "'softcap' must be a positive constant, but " + quote(f->text) +
                                 " is " + formatDouble(value));
    return false;
  }
  spec_.softcap = value;
  return true;
}

bool KernelSema::resolveBias(const FieldAST *f) {
  if (!f)
    return true;
  if (!singleValue(*f))
    return false;
  const Expr &v = *f->value;
  ExprScope exprScope = scope(ExprContext::Bias, "bias");
  if (v.kind == ExprKind::Name) {
    if (v.name == "none") { spec_.bias = BiasKind::None; return true; }
    if (v.name == "alibi") { spec_.bias = BiasKind::Alibi; return true; }
    if (!isExpressionName(v.name, exprScope) && v.name != "s")
      return badValue(*f, {"none", "alibi"});
  }
  ExprPtr expr = v.clone();
  ExprType type = checkExpr(*expr, exprScope, diag_);
  if (type == ExprType::Unknown)
    return false;
  if (type == ExprType::Bool) {
    diag_.error(f->valueLoc, "'bias' must be a number, but this expression is a boolean");
    return false;
  }
  spec_.bias = BiasKind::Custom;
  spec_.biasExpr = std::move(expr);
  return true;
}

/// Where an expression starts in the source (a binary node sits at its operator).
static SourceLoc startLoc(const Expr &e) {
  return e.kind == ExprKind::Binary ? startLoc(*e.operands[0]) : e.loc;
}

/// `NAME(N)` of a built-in term that takes an integer (window(W), sink(S)).
bool KernelSema::maskWidth(const Expr &term, MaskTerm &result) {
  const char *what = result.kind == MaskKind::Window ? "'window(W)' takes one integer width W"
                                                     : "'sink(S)' takes one integer count S";
  const Expr *w = term.operands.size() == 1 ? term.operands[0].get() : nullptr;
  if (!w || !w->argName.empty() || w->kind != ExprKind::IntLit || w->intValue < 1 ||
      w->intValue > limits::kMaxSeq) {
    diag_.error(w ? w->loc : term.loc,
                std::string(what) + " between 1 and " + std::to_string(limits::kMaxSeq));
    return false;
  }
  result.width = w->intValue;
  return true;
}

/// One term of a mask; lastMaskTerm_ is its index in spec_.masks.
bool KernelSema::maskTerm(const Expr &term, SourceLoc start,
                          std::map<MaskKind, SourceLoc> &seen) {
  ExprScope exprScope = scope(ExprContext::Mask, "mask");
  static const std::vector<std::string> words = {"none",   "causal",      "valid_len",
                                                 "window", "sink",        "prefix",
                                                 "input",  "key_padding"};
  MaskTerm result;
  result.loc = start;
  std::optional<MaskKind> builtin = parseMaskKind(term.name);
  bool named = builtin && *builtin != MaskKind::Custom;
  if (term.kind == ExprKind::Name && !isExpressionName(term.name, exprScope)) {
    if (named && !kindInfo(*builtin).widthAttr) {
      result.kind = *builtin;
    } else if (named) {
      diag_.error(term.loc, quote(term.name) + " needs its " +
                                (*builtin == MaskKind::Window ? "width: 'window(W)'"
                                                              : "count: 'sink(S)'"));
      return false;
    } else if (term.name == "none") {
      diag_.error(term.loc, "'none' cannot be combined with other masks");
      return false;
    } else {
      diag_.error(term.loc, "invalid mask " + quote(term.name) + "; expected " +
                                acceptedForms("mask") + didYouMean(term.name, words));
      return false;
    }
  } else if (term.kind == ExprKind::Call && named && kindInfo(*builtin).widthAttr) {
    result.kind = *builtin;
    if (!maskWidth(term, result))
      return false;
  } else {
    ExprPtr expr = term.clone();
    ExprType type = checkExpr(*expr, exprScope, diag_);
    if (type == ExprType::Unknown)
      return false;
    if (type != ExprType::Bool) {
      diag_.error(start, std::string("'mask' must be a boolean expression (e.g. "
                                        "'j <= ip'), but this expression is ") +
                                (type == ExprType::Int ? "an integer" : "a float"));
      return false;
    }
    result.kind = MaskKind::Custom;
    result.expr = std::move(expr);
  }
  if (result.kind != MaskKind::Custom) {
    auto [it, inserted] = seen.insert({result.kind, term.loc});
    if (!inserted) {
      // The same term again (`(causal & window(8)) | (causal & sink(4))`)
      // is the same term; a second, different one of a kind is an error.
      for (size_t n = 0; maskHasUnion_ && n < spec_.masks.size(); ++n)
        if (spec_.masks[n].kind == result.kind && spec_.masks[n].width == result.width) {
          lastMaskTerm_ = (int)n;
          return true;
        }
      diag_.error(term.loc, std::string("mask '") + toString(result.kind) +
                                "' appears twice");
      diag_.note(it->second, "first defined here");
      return false;
    }
  }
  spec_.masks.push_back(std::move(result));
  lastMaskTerm_ = (int)spec_.masks.size() - 1;
  return true;
}

/// The groups (disjunctive normal form) of the mask formula `e`, its terms
/// appended to spec_.masks in source order: a | b is the groups of a then
/// of b; a & b every group of a joined with every group of b.
std::optional<KernelSema::MaskGroups> KernelSema::maskGroups(const Expr &e,
                                                             std::map<MaskKind, SourceLoc> &seen) {
  bool isAnd = e.kind == ExprKind::Binary && e.binaryOp == BinaryOp::MaskAnd;
  bool isOr = e.kind == ExprKind::Binary && e.binaryOp == BinaryOp::MaskOr;
  if (!isAnd && !isOr) {
    if (!maskTerm(e, startLoc(e), seen))
      return std::nullopt;
    return MaskGroups{{lastMaskTerm_}};
  }
  std::optional<MaskGroups> lhs = maskGroups(*e.operands[0], seen);
  std::optional<MaskGroups> rhs = maskGroups(*e.operands[1], seen);
  if (!lhs || !rhs)
    return std::nullopt;
  MaskGroups groups;
  if (isOr) {
    groups = std::move(*lhs);
    groups.insert(groups.end(), rhs->begin(), rhs->end());
  } else {
    for (const std::vector<int> &a : *lhs)
      for (const std::vector<int> &b : *rhs) {
        groups.push_back(a);
        groups.back().insert(groups.back().end(), b.begin(), b.end());
      }
  }
  if (groups.size() > (size_t)kMaxMaskGroups) {
    diag_.error(e.loc, "this mask has more than " + std::to_string(kMaxMaskGroups) +
                           " alternatives once '&' is distributed over '|'; simplify it");
    return std::nullopt;
  }
  return groups;
}

bool KernelSema::resolveMask(const FieldAST *f) {
  if (!f)
    return true;
  if (f->separator == ',') {
    diag_.error(f->moreValues.front()->loc,
                "join masks with '&' (e.g. 'mask = causal & window(256)'), not ','");
    return false;
  }
  const Expr &first = *f->value;
  if (first.kind == ExprKind::Name && first.name == "none" && f->moreValues.empty())
    return true;
  std::map<MaskKind, SourceLoc> seen;
  std::function<bool(const Expr &)> hasUnion = [&](const Expr &e) {
    if (e.kind != ExprKind::Binary)
      return false;
    return e.binaryOp == BinaryOp::MaskOr || hasUnion(*e.operands[0]) ||
           hasUnion(*e.operands[1]);
  };
  maskHasUnion_ = hasUnion(first);
  std::optional<MaskGroups> groups = maskGroups(first, seen);
  if (!groups)
    return false;
  if (groups->size() > 1)
    spec_.maskGroups = std::move(*groups);
  return true;
}

/// `rotary(base = B, style = half | interleaved, dims = N)`, every argument
/// optional and by keyword; dims is checked against head_dim later.
bool KernelSema::resolveRotary(const Expr &call) {
  spec_.positional = PositionalKind::Rotary;
  std::set<std::string> seen;
  for (const ExprPtr &arg : call.operands) {
    const std::string &key = arg->argName;
    if (key != "base" && key != "style" && key != "dims") {
      diag_.error(arg->loc, key.empty()
                                ? "'rotary' takes keyword arguments: 'rotary(base = 10000, "
                                  "style = half, dims = N)'"
                                : "'rotary' has no argument " + quote(key) +
                                      "; it takes base, style and dims");
      return false;
    }
    if (!seen.insert(key).second) {
      diag_.error(arg->loc, "'rotary' argument " + quote(key) + " is given twice");
      return false;
    }
    if (key == "base") {
      bool number = arg->kind == ExprKind::IntLit || arg->kind == ExprKind::FloatLit;
      double base = arg->kind == ExprKind::IntLit ? (double)arg->intValue : arg->floatValue;
      if (!number || !(base > 1.0) || !std::isfinite(base)) {
        diag_.error(arg->loc, "the base of 'rotary' must be a number greater than 1");
        return false;
      }
      spec_.rotary.base = base;
    } else if (key == "style") {
      std::optional<RotaryStyle> style =
          arg->kind == ExprKind::Name ? parseRotaryStyle(arg->name) : std::nullopt;
      if (!style) {
        diag_.error(arg->loc, "the style of 'rotary' must be 'half' (GPT-NeoX, Llama) or "
                              "'interleaved' (GPT-J)");
        return false;
      }
      spec_.rotary.style = *style;
    } else {
      if (arg->kind != ExprKind::IntLit || arg->intValue < 2 || arg->intValue % 2 != 0 ||
          arg->intValue > limits::kMaxDim) {
        diag_.error(arg->loc, "the dims of 'rotary' must be an even integer between 2 and "
                              "'head_dim'");
        return false;
      }
      spec_.rotary.dims = (long)arg->intValue;
    }
  }
  return true;
}

void KernelSema::checkCrossFieldRules() {
  bool sizesOk = !failed("heads") && !failed("kv_heads");
  if (sizesOk && spec_.heads % spec_.kvHeads != 0) {
    diag_.error(locOf("kv_heads"), "'kv_heads' (" + std::to_string(spec_.kvHeads) +
                                       ") must divide 'heads' (" +
                                       std::to_string(spec_.heads) + ")");
  }
  if (!failed("key_dim") && !failed("head_dim") && !failed("score") && spec_.headDim &&
      spec_.keyDim != spec_.headDim && !kindInfo(spec_.score).keyWidthMayDiffer) {
    diag_.error(locOf("key_dim"),
                "'key_dim' (" + std::to_string(spec_.keyDim) + ") differs from 'head_dim' (" +
                    std::to_string(spec_.headDim) +
                    "); keys of another width need 'score = additive(hidden = N)'");
  }
  bool hasProject = spec_.project != ProjectKind::None;
  if (!failed("project")) {
    if (hasProject && !given("model_dim"))
      diag_.error(locOf("project"), std::string("'project = ") + toString(spec_.project) +
                                        "' needs 'model_dim', the width of the "
                                        "un-projected input");
    if (given("kv_model_dim") && !failed("kv_model_dim") &&
        spec_.project != ProjectKind::QKV && spec_.project != ProjectKind::QKVOut)
      diag_.error(locOf("kv_model_dim"),
                  "'kv_model_dim' is the width of 'x_kv' and needs 'project = qkv' or "
                  "'qkv_out' (cross-attention)");
    if (!hasProject) {
      if (given("model_dim") && !failed("model_dim"))
        diag_.error(locOf("model_dim"), "'model_dim' is only meaningful with 'project'");
      if (spec_.projBias.any())
        diag_.error(locOf("proj_bias"), "'proj_bias' is only meaningful with 'project'");
      if (spec_.positional == PositionalKind::Sinusoidal)
        diag_.error(locOf("positional"),
                    "'positional = sinusoidal' needs 'project' (positions are added to "
                    "the un-projected inputs)");
    } else if (biasListsO_ && !hasOutputProjection(spec_.project)) {
      diag_.error(locOf("proj_bias"), "'o' in 'proj_bias' needs an output projection "
                                      "('project = qkv_out' or 'self_qkv_out')");
    }
  }
  if (spec_.positional == PositionalKind::Rotary && !failed("positional")) {
    if (!failed("score") && !kindInfo(spec_.score).takesRotary)
      diag_.error(locOf("positional"),
                  std::string("'positional = rotary' needs a dot-family score (dot, "
                              "scaled_dot, cosine or an expression), not '") +
                      toString(spec_.score) + "'");
    else if (!failed("key_dim") && !failed("head_dim") && spec_.keyDim != spec_.headDim)
      diag_.error(locOf("positional"), "'positional = rotary' needs 'key_dim' = 'head_dim'");
    else if (!failed("head_dim") && spec_.rotary.dims > spec_.headDim)
      diag_.error(locOf("positional"),
                  "'rotary' rotates " + std::to_string(spec_.rotary.dims) +
                      " channels but 'head_dim' is " + std::to_string(spec_.headDim));
    else if (!failed("head_dim") && spec_.rotary.dims == 0 && spec_.headDim % 2 != 0)
      diag_.error(locOf("positional"),
                  "'rotary' turns channel pairs, and 'head_dim' (" +
                      std::to_string(spec_.headDim) + ") is odd; give an even 'dims'");
    if (spec_.rotary.dims == 0)
      spec_.rotary.dims = (long)spec_.headDim;
  }
  if (spec_.packed)
    checkPackedRules();
  if (spec_.cache.any() && !failed("cache"))
    checkCacheRules();
  if (spec_.backward && !failed("backward"))
    checkBackwardRules();
  // (With a cache, seq_k is the cache's capacity, not the new tokens' count.)
  bool selfProject = spec_.project == ProjectKind::SelfQKV ||
                     spec_.project == ProjectKind::SelfQKVOut;
  if (selfProject && !spec_.cache.any() && !failed("seq_k") && !failed("seq_q")) {
    const SizeSpec &k = spec_.seqK;
    bool consistent = !given("seq_k") || k.kind == SizeSpec::SameAsSeqQ ||
                      (k.isFixed() && spec_.seqQ.isFixed() && k.value == spec_.seqQ.value);
    if (!consistent)
      diag_.error(locOf("seq_k"), std::string("with 'project = ") + toString(spec_.project) +
                                      "' queries and keys are one sequence; leave 'seq_k' "
                                      "out or write 'seq_k = seq_q'");
    else {
      spec_.seqK.kind = SizeSpec::SameAsSeqQ;
      spec_.seqK.value = spec_.seqQ.value;
    }
  }
  if (spec_.seqK.kind == SizeSpec::SameAsSeqQ)
    spec_.seqK.value = spec_.seqQ.isFixed() ? spec_.seqQ.value : 0;
  if (failed_.empty())
    checkArgumentSizes();
}

/// batch = packed (docs/language.md, packed batches, 9.8): what a ragged batch cannot have.
void KernelSema::checkPackedRules() {
  const char *why = nullptr;
  std::string field;
  if (given("seq_q") || given("seq_k")) {
    field = given("seq_q") ? "seq_q" : "seq_k";
    why = "with 'batch = packed' the token counts Tq and Tk come from the arguments; leave "
          "'seq_q' and 'seq_k' out";
  } else if (spec_.outputWeights) {
    field = "outputs";
    why = "'weights' would be ragged with 'batch = packed'; ask for 'out' and 'lse'";
  } else if (spec_.hasMask(MaskKind::KeyPadding)) {
    field = "mask";
    why = "'key_padding' is refused with 'batch = packed': the sequences' lengths already "
          "say which keys exist";
  } else if (spec_.hasMask(MaskKind::Input)) {
    field = "mask";
    why = "'mask = input' ([B, Lq, Lk]) is refused with 'batch = packed'; write the mask "
          "as an expression";
  } else if (spec_.positional == PositionalKind::Sinusoidal) {
    field = "positional";
    why = "'positional = sinusoidal' is refused with 'batch = packed' (it would add "
          "positions of the token axis); use 'rotary', which is per sequence";
  } else if (given("layout")) {
    field = "layout";
    why = "'layout' has no meaning with 'batch = packed': tokens are [T, heads, width]";
  }
  if (why)
    diag_.error(locOf(field.c_str()), why);
}

/// cache (docs/language.md, KV caches): the new tokens' q, k, v against the
/// caches; what cannot combine with that.
void KernelSema::checkCacheRules() {
  const char *why = nullptr;
  std::string field;
  if (spec_.packed) {
    field = "batch";
    why = "'cache' and 'batch = packed' exclude each other: a cached batch has one sequence "
          "per batch row, with its own 'cache_len'";
  } else if (spec_.positional == PositionalKind::Sinusoidal) {
    field = "positional";
    why = "'positional = sinusoidal' is refused with a cache (it would number each call's new "
          "tokens from 0); use 'rotary', which turns them at cache_len[b] + i";
  } else if (spec_.outputWeights) {
    field = "outputs";
    why = "'weights' would be ragged with a cache (each sequence has its own length); ask for "
          "'out' and 'lse'";
  } else if (spec_.hasMask(MaskKind::KeyPadding) || spec_.hasMask(MaskKind::Input)) {
    field = "mask";
    why = "'key_padding' and 'mask = input' are refused with a cache: 'cache_len' already "
          "says which keys exist; write the mask as an expression";
  } else if (given("seq_k") && spec_.cache.paged()) {
    field = "seq_k";
    why = "with 'cache = paged(...)' the keys are the cache's blocks; leave 'seq_k' out";
  } else if (given("seq_k") && spec_.seqK.kind == SizeSpec::SameAsSeqQ) {
    field = "seq_k";
    why = "with 'cache = contiguous', 'seq_k' is the cache's capacity Lmax: an integer or "
          "'dynamic'";
  }
  if (why)
    diag_.error(locOf(field.c_str()), why);
}

/// backward = true (docs/language.md, training): the backward kernel reads
/// `lse`, and a KV cache (generation) has no backward.
void KernelSema::checkBackwardRules() {
  std::string why, field = "backward";
  if (!spec_.outputLse) {
    why = "'backward = true' needs 'lse' among the outputs: the backward kernel recomputes "
          "the probabilities from it (e.g. 'outputs = out, lse')";
    field = given("outputs") ? "outputs" : "backward";
  } else if (spec_.cache.any()) {
    why = "'backward' excludes 'cache': a KV cache serves generation, not training";
    field = "cache";
  }
  if (!why.empty())
    diag_.error(locOf(field.c_str()), why);
}

/// Every argument whose dimensions are all fixed must stay addressable with
/// int32 offsets (Halide buffers); partially dynamic ones are checked at run time.
void KernelSema::checkArgumentSizes() {
  for (const ArgSpec &arg : kernelArguments(spec_)) {
    int64_t elements = 1;
    bool overflow = false, dynamic = false;
    for (const ArgDim &dim : arg.shape) {
      if (dim.value <= 0) {
        dynamic = true;
        break;
      }
      overflow |= __builtin_mul_overflow(elements, dim.value, &elements);
    }
    if (dynamic)
      continue;
    if (overflow || elements > limits::kMaxElements) {
      diag_.error(kernel_.loc, "argument " + quote(arg.name) + " of kernel " +
                                   quote(kernel_.name) + " (" + formatShape(arg) +
                                   ") has more than 2^31-1 elements, the most a Halide "
                                   "buffer can address");
      return;
    }
  }
}

const FieldInfo kFields[] = {
    {"heads", "an integer >= 1", &KernelSema::resolveHeads},
    {"kv_heads", "an integer >= 1 that divides 'heads'", &KernelSema::resolveKvHeads},
    {"head_dim", "an integer >= 1", &KernelSema::resolveHeadDim},
    {"key_dim", "an integer >= 1", &KernelSema::resolveKeyDim},
    {"value_dim", "an integer >= 1", &KernelSema::resolveValueDim},
    {"batch", "an integer >= 1, 'dynamic' or 'packed'", &KernelSema::resolveBatch},
    {"seq_q", "an integer >= 1 or 'dynamic'", &KernelSema::resolveSeqQ},
    {"seq_k", "an integer >= 1, 'dynamic' or 'seq_q'", &KernelSema::resolveSeqK},
    {"project", "one of: none, self_qkv, qkv, qkv_out, self_qkv_out",
     &KernelSema::resolveProject},
    {"model_dim", "an integer >= 1", &KernelSema::resolveModelDim},
    {"kv_model_dim", "an integer >= 1", &KernelSema::resolveKvModelDim},
    {"proj_bias", "one of: true, false, or the projections with a bias (e.g. 'q, v, o')",
     &KernelSema::resolveProjBias},
    {"positional", "one of: none, sinusoidal, rotary(base = B, style = half | interleaved, dims = N)",
     &KernelSema::resolvePositional},
    {"layout", "one of: bhsd, bshd", &KernelSema::resolveLayout},
    {"cache", "one of: none, contiguous, paged(block = N)", &KernelSema::resolveCache},
    {"dtype", "one of: f32, f16, bf16", &KernelSema::resolveDtype},
    {"kv_dtype", "one of: f32, f16, bf16 (default: dtype)", &KernelSema::resolveKvDtype},
    {"outputs", "'out', optionally followed by 'weights' and/or 'lse', comma separated",
     &KernelSema::resolveOutputs},
    {"backward", "true or false", &KernelSema::resolveBackward},
    {"score", "one of: dot, scaled_dot, additive(hidden = N), general, cosine, or an expression",
     &KernelSema::resolveScore},
    {"scale", "a constant expression such as 0.125 or 1/sqrt(64)",
     &KernelSema::resolveScale},
    {"softcap", "a positive constant such as 30 or 50.0", &KernelSema::resolveSoftcap},
    {"bias", "one of: none, alibi, or an expression", &KernelSema::resolveBias},
    {"mask",
     "one of: none, causal, window(W), sink(S), valid_len, prefix, key_padding, input, a "
     "boolean expression, or several joined by '&' and '|'",
     &KernelSema::resolveMask},
};
const size_t kNumFields = sizeof(kFields) / sizeof(kFields[0]);

} // namespace

const std::vector<std::string> &knownFieldNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const FieldInfo &info : kFields)
      n.push_back(info.name);
    return n;
  }();
  return names;
}

bool isCKeyword(const std::string &name) {
  return std::find(kCKeywords.begin(), kCKeywords.end(), name) != kCKeywords.end();
}

const char *dropoutMessage() { return kDropoutMessage; }

const char *acceptedForms(const std::string &field) {
  for (const FieldInfo &info : kFields)
    if (field == info.name)
      return info.forms;
  return "";
}

std::optional<KernelSpec> analyzeKernel(const KernelAST &kernel,
                                        const std::vector<const FieldAST *> &overrides,
                                        DiagnosticEngine &diag) {
  return KernelSema(kernel, diag).run(overrides);
}

} // namespace attnc
