// Least squares: the small dense solver under the principle analysis
// (scheduler/analysis/principle_analysis.h) and the surrogate
// (scheduler/strategy/surrogate.h): modified Gram-Schmidt QR of a design given
// by columns, weighted least squares on it, and ridge regression as least
// squares on an augmented design.
//
//   std::optional<LeastSquaresFit> fit =
//       FitWeightedLeastSquares({ones, x}, y, weights);
//   std::optional<std::vector<double>> b = FitRidge({x1, x2}, y, w, 1.0);
//
// Thread-safety: pure functions.
#ifndef PRISM_SCHEDULER_STATS_LEAST_SQUARES_H_
#define PRISM_SCHEDULER_STATS_LEAST_SQUARES_H_

#include <cstddef>
#include <optional>
#include <vector>

namespace prism {

// A design matrix by columns: columns[j][i] is row i of column j.
using Columns = std::vector<std::vector<double>>;

// ColumnRank returns the number of linearly independent columns, by modified
// Gram-Schmidt: a column whose norm left after removing the span of the
// columns kept before it is <= 1e-9 of its own norm adds nothing. 0 for no
// columns.
int ColumnRank(const Columns& columns);

// LeastSquaresFit is the solution of a weighted least-squares problem.
struct LeastSquaresFit {
  std::vector<double> coefficients;     // one per column
  std::vector<double> standard_errors;  // sqrt(sigma^2 [(X'WX)^-1]_jj)
  double residual_variance = 0.0;       // sum w_i r_i^2 / dof
  int dof = 0;                          // rows - columns
};

// FitWeightedLeastSquares minimizes sum_i w_i (y_i - sum_j x_ij b_j)^2 by a
// QR decomposition (modified Gram-Schmidt) of the design with its rows scaled
// by sqrt(w_i). Every column and `weights` must have y's length, and weights
// must be > 0. Returns nullopt when they do not, when there are no columns,
// when rows <= columns (no degree of freedom for sigma^2) or when the columns
// are linearly dependent (ColumnRank < columns).
std::optional<LeastSquaresFit> FitWeightedLeastSquares(
    const Columns& columns, const std::vector<double>& y,
    const std::vector<double>& weights);

// ThinQr is the modified Gram-Schmidt decomposition of the independent
// columns of a design: kept[c] is the design column of q[c]; r[a][c] (a <= c)
// the upper triangular factor over the kept columns.
struct ThinQr {
  Columns q;
  std::vector<std::vector<double>> r;
  std::vector<size_t> kept;
};

// DecomposeColumns returns the thin QR of `columns`' independent columns (in
// order; a column ColumnRank would not count is left out of `kept`).
ThinQr DecomposeColumns(const Columns& columns);

// FitRidge minimizes
//   sum_i w_i (y_i - b_0 - sum_j x_ij b_j)^2 + lambda sum_j b_j^2
// over the intercept b_0 (not penalized) and one coefficient per column of
// `features`, by FitWeightedLeastSquares on the design [1 | X] with one
// extra row sqrt(lambda) e_j (weight 1) per feature: ridge regression is
// least squares on that augmented design, which is full rank for any data.
// Returns {b_0, b_1, ...}. nullopt when a column or `weights` does not have
// y's length, a weight is not > 0, lambda is not > 0, or y has fewer than 2
// values.
std::optional<std::vector<double>> FitRidge(const Columns& features,
                                            const std::vector<double>& y,
                                            const std::vector<double>& weights,
                                            double lambda);

}  // namespace prism

#endif  // PRISM_SCHEDULER_STATS_LEAST_SQUARES_H_
