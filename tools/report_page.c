/* The HTML page's frame and writing primitives, shared by the job's page (report_html.c), one
 * communicator's sections (report_html_comm.c) and the comparison of two runs
 * (report_compare.c): the style, the sorting script, numbers copied from a report (data-r, data-p,
 * data-x) and numbers the page derives (data-v). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "report.h"
#include "report_html.h"

const char rp_style[] =
    "body{font:14px/1.4 sans-serif;margin:0;color:#212121;background:#fafafa}"
    "header,section,footer{max-width:1240px;margin:0 auto;padding:6px 16px}"
    "header{background:#263238;color:#eceff1;max-width:none}header>*{max-width:1240px;margin:4px auto}"
    "header code{color:#212121}"
    "h1{font-size:20px;margin:6px auto}h2{font-size:18px;margin:16px 0 6px;border-bottom:2px solid #90a4ae}"
    "h3{font-size:15px;margin:12px 0 4px}"
    ".ok{background:#e8f5e9;border-left:6px solid #2e7d32}.bad{background:#ffebee;border-left:6px solid #c62828}"
    ".warn{background:#fff8e1;border-left:6px solid #f9a825}"
    ".box{padding:6px 12px;margin:6px 0;color:#212121}.big{font-size:18px;font-weight:bold}"
    ".hint{color:#1b5e20;margin-left:12px}.hint code,code{background:#eceff1;padding:0 3px}"
    ".diff{color:#c62828;font-weight:bold}.same{color:#2e7d32}.note{color:#546e7a}"
    ".row{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}.row>div{flex:1 1 480px}"
    "table{border-collapse:collapse;margin:4px 0;background:white}"
    "td,th{border:1px solid #cfd8dc;padding:2px 7px;vertical-align:top}th{background:#eceff1;text-align:left}"
    "th[title]{text-decoration:underline dotted}th.sort{cursor:pointer}th.sort:hover{background:#cfd8dc}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.chosen td{background:#e3f2fd}svg{max-width:100%;height:auto}"
    "table.run{font-size:13px}table.run td{max-width:1000px;overflow-wrap:anywhere}"
    "details{margin:6px 0}summary{cursor:pointer;font-weight:bold}"
    "ul.reasons{margin:4px 0;padding-left:22px}";

/* Sorting a table by a clicked header: the only script, inline like the style. */
const char rp_script[] =
    "document.querySelectorAll('table.sortable th').forEach(function(th){th.classList.add('sort');"
    "th.addEventListener('click',function(){"
    "var tb=th.closest('table').tBodies[0],i=th.cellIndex,d=th.dataset.dir==='1'?-1:1;th.dataset.dir=d===1?'1':'-1';"
    "var rows=Array.prototype.slice.call(tb.rows);"
    "rows.sort(function(a,b){var x=a.cells[i].textContent,y=b.cells[i].textContent,p=parseFloat(x),q=parseFloat(y);"
    "return (isNaN(p)||isNaN(q)?x.localeCompare(y):p-q)*d;});"
    "rows.forEach(function(r){tb.appendChild(r);});});});";

void rp_out(rp_page *pg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(pg->f, fmt, ap);
    va_end(ap);
}

void rp_num(rp_page *pg, const char *tag, const char *attrs, int rank, double scale, int dec, double v,
            const char *where, ...)
{
    char p[512];
    va_list ap;
    va_start(ap, where);
    vsnprintf(p, sizeof p, where, ap);
    va_end(ap);
    if (!isfinite(v)) {
        rp_out(pg, "<%s%s%s>&#8211;</%s>", tag, attrs ? " " : "", attrs ? attrs : "", tag);
        return;
    }
    rp_out(pg, "<%s%s%s data-r=\"%d\" data-p=\"%s\" data-x=\"%.17g\">", tag, attrs ? " " : "", attrs ? attrs : "", rank,
           p, scale);
    if (dec < 0)
        rp_out(pg, "%.4e", v * scale);
    else
        rp_out(pg, "%.*f", dec, v * scale);
    rp_out(pg, "</%s>", tag);
}

void rp_derived(rp_page *pg, const char *tag, const char *attrs, double scale, int dec, double v)
{
    if (!isfinite(v)) {
        rp_out(pg, "<%s%s%s>&#8211;</%s>", tag, attrs ? " " : "", attrs ? attrs : "", tag);
        return;
    }
    rp_out(pg, "<%s%s%s data-v=\"%.17g\" data-x=\"%.17g\">%.*f</%s>", tag, attrs ? " " : "", attrs ? attrs : "", v,
           scale, dec, v * scale, tag);
}

const char *rp_version_text(long v, char *buf, size_t len, int nccl)
{
    if (v <= 0)
        snprintf(buf, len, "?");
    else if (nccl) /* NCCL_VERSION_CODE: major*10000 + minor*100 + patch */
        snprintf(buf, len, "%ld.%ld.%ld", v / 10000, v / 100 % 100, v % 100);
    else /* CUDA: major*1000 + minor*10 */
        snprintf(buf, len, "%ld.%ld", v / 1000, v % 1000 / 10);
    return buf;
}

void rp_page_open(rp_page *pg, const char *title)
{
    rp_out(pg, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>");
    esc(pg->f, title);
    rp_out(pg, "</title>\n<style>%s</style></head>\n<body>\n", rp_style);
}

void rp_page_close(rp_page *pg)
{
    rp_out(pg, "<script>%s</script>\n</body></html>\n", rp_script);
}

/* "0-3, 5" for ranks listed by the flags of the job's reports. */
void rp_rank_list(rp_page *pg, const bool *on)
{
    char *ranges = rp_rank_ranges(pg->job, on);
    rp_out(pg, "%s", ranges);
    free(ranges);
}
