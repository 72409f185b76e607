#include "scheduler/stats/least_squares.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace prism {
namespace {

// A column is dependent when Gram-Schmidt leaves at most this fraction of its
// norm. Indicator columns are either dependent (exactly 0 left, up to
// rounding) or leave a sizeable part, so the threshold is not delicate.
constexpr double kDependentTolerance = 1e-9;

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

ThinQr DecomposeColumns(const Columns& columns) {
  ThinQr qr;
  for (size_t j = 0; j < columns.size(); ++j) {
    std::vector<double> v = columns[j];
    const double norm0 = std::sqrt(Dot(v, v));
    std::vector<double> r_column;
    for (const std::vector<double>& q : qr.q) {
      const double r = Dot(q, v);
      for (size_t i = 0; i < v.size(); ++i) v[i] -= r * q[i];
      r_column.push_back(r);
    }
    const double norm = std::sqrt(Dot(v, v));
    if (norm0 == 0.0 || norm <= kDependentTolerance * norm0) continue;
    for (double& x : v) x /= norm;
    qr.q.push_back(std::move(v));
    r_column.push_back(norm);
    for (size_t a = 0; a < r_column.size(); ++a) {
      if (a == qr.r.size()) qr.r.emplace_back();
      qr.r[a].resize(r_column.size(), 0.0);
      qr.r[a][r_column.size() - 1] = r_column[a];
    }
    qr.kept.push_back(j);
  }
  return qr;
}

int ColumnRank(const Columns& columns) {
  return static_cast<int>(DecomposeColumns(columns).kept.size());
}

std::optional<LeastSquaresFit> FitWeightedLeastSquares(
    const Columns& columns, const std::vector<double>& y,
    const std::vector<double>& weights) {
  const size_t rows = y.size();
  const size_t k = columns.size();
  if (k == 0 || rows <= k || weights.size() != rows) return std::nullopt;
  for (const std::vector<double>& c : columns) {
    if (c.size() != rows) return std::nullopt;
  }
  std::vector<double> root(rows);
  for (size_t i = 0; i < rows; ++i) {
    if (!(weights[i] > 0.0)) return std::nullopt;
    root[i] = std::sqrt(weights[i]);
  }
  Columns scaled = columns;
  for (std::vector<double>& c : scaled) {
    for (size_t i = 0; i < rows; ++i) c[i] *= root[i];
  }
  std::vector<double> scaled_y(rows);
  for (size_t i = 0; i < rows; ++i) scaled_y[i] = y[i] * root[i];

  const ThinQr qr = DecomposeColumns(scaled);
  if (qr.kept.size() != k) return std::nullopt;
  // R b = Q'y by back substitution.
  LeastSquaresFit fit;
  fit.coefficients.assign(k, 0.0);
  for (size_t a = k; a-- > 0;) {
    double sum = Dot(qr.q[a], scaled_y);
    for (size_t c = a + 1; c < k; ++c) sum -= qr.r[a][c] * fit.coefficients[c];
    fit.coefficients[a] = sum / qr.r[a][a];
  }
  double rss = 0.0;
  for (size_t i = 0; i < rows; ++i) {
    double residual = scaled_y[i];
    for (size_t j = 0; j < k; ++j) {
      residual -= scaled[j][i] * fit.coefficients[j];
    }
    rss += residual * residual;
  }
  fit.dof = static_cast<int>(rows - k);
  fit.residual_variance = rss / fit.dof;
  // (X'WX)^-1 = R^-1 R^-T: its diagonal is the squared norms of R^-1's rows.
  std::vector<std::vector<double>> inverse(k, std::vector<double>(k, 0.0));
  for (size_t c = 0; c < k; ++c) {
    inverse[c][c] = 1.0 / qr.r[c][c];
    for (size_t a = c; a-- > 0;) {
      double sum = 0.0;
      for (size_t b = a + 1; b <= c; ++b) sum += qr.r[a][b] * inverse[b][c];
      inverse[a][c] = -sum / qr.r[a][a];
    }
  }
  fit.standard_errors.resize(k);
  for (size_t a = 0; a < k; ++a) {
    double sum = 0.0;
    for (size_t c = a; c < k; ++c) sum += inverse[a][c] * inverse[a][c];
    fit.standard_errors[a] = std::sqrt(fit.residual_variance * sum);
  }
  return fit;
}

std::optional<std::vector<double>> FitRidge(const Columns& features,
                                            const std::vector<double>& y,
                                            const std::vector<double>& weights,
                                            double lambda) {
  const size_t rows = y.size();
  const size_t k = features.size();
  if (rows < 2 || !(lambda > 0.0) || weights.size() != rows) {
    return std::nullopt;
  }
  for (const std::vector<double>& c : features) {
    if (c.size() != rows) return std::nullopt;
  }
  const double root_lambda = std::sqrt(lambda);
  Columns design(k + 1, std::vector<double>(rows + k, 0.0));
  std::fill(design[0].begin(), design[0].begin() + rows, 1.0);
  for (size_t j = 0; j < k; ++j) {
    std::copy(features[j].begin(), features[j].end(), design[j + 1].begin());
    design[j + 1][rows + j] = root_lambda;
  }
  std::vector<double> augmented_y = y;
  augmented_y.resize(rows + k, 0.0);
  std::vector<double> augmented_w = weights;
  augmented_w.resize(rows + k, 1.0);
  std::optional<LeastSquaresFit> fit =
      FitWeightedLeastSquares(design, augmented_y, augmented_w);
  if (!fit.has_value()) return std::nullopt;
  return std::move(fit->coefficients);
}

}  // namespace prism
