// The style sheets of report.html, inline in every page (the page fetches nothing).
#pragma once

namespace prereg::render {

/// The renderer 1 sheet; kept byte for byte, renderer 2 appends html_css_r2.
extern const char *const html_css;

/// Renderer 2's additions, after the renderer 1 sheet.
extern const char *const html_css_r2;

} // namespace prereg::render
