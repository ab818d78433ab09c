"""The CSS and script of report.html, kept apart from the markup that uses them."""

CSS = """
:root{--bg:#fff;--fg:#1d2330;--muted:#6b7280;--line:#e5e7eb;--panel:#f8fafc;--accent:#4f6bed;
--pass:#16a34a;--fail:#dc2626;--error:#d97706;--flaky:#9333ea;--heat-l:86%;--heat-s:62%}
@media (prefers-color-scheme:dark){:root{--bg:#0f1420;--fg:#e5e7eb;--muted:#9ca3af;
--line:#273043;--panel:#151c2c;--accent:#7c93ff;--heat-l:30%;--heat-s:45%}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1200px;padding:24px;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px}h4{margin:14px 0 6px}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{white-space:pre-wrap;word-break:break-word;margin:0}
.muted{color:var(--muted)}a{color:var(--accent)}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
.card{flex:1 1 120px;background:var(--panel);border:1px solid var(--line);border-radius:10px;
padding:10px 14px}.card .k{color:var(--muted);font-size:12px;text-transform:uppercase}
.card .v{font-size:24px;font-weight:650}.card .v.small{font-size:18px;padding-top:5px}
.card.pass .v{color:var(--pass)}.card.fail .v{color:var(--fail)}.card.error .v{color:var(--error)}
.banner{border-left:4px solid var(--fail);background:var(--panel);padding:8px 12px;margin:8px 0}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(420px,100%),1fr));gap:14px}
.charts .wide{grid-column:1/-1}.charts .wide svg{max-width:760px;display:block}
figure{margin:0;background:var(--panel);border:1px solid var(--line);border-radius:10px;
padding:12px}figcaption{font-weight:600;margin-bottom:6px}svg{width:100%;height:auto}
svg text{fill:var(--fg);font-size:11px}svg .axis{fill:var(--muted);font-size:10px}
svg .grid{stroke:var(--line)}svg .bar{fill:var(--accent);opacity:.85}
svg .whisker{stroke:var(--fg);stroke-width:1.5;fill:none}svg .value{font-weight:600}
svg .thr{stroke-width:3;stroke-dasharray:3 2}svg .thr.met{stroke:var(--pass)}
svg .thr.missed{stroke:var(--fail)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%}th,td{padding:6px 8px;text-align:left;
vertical-align:top;border-bottom:1px solid var(--line)}th{font-weight:600;white-space:nowrap}
.n{text-align:right;font-variant-numeric:tabular-nums}
.heat td.cell{background:hsl(var(--h) var(--heat-s) var(--heat-l));text-align:center;border:2px solid var(--bg);
white-space:nowrap}.heat td.none{text-align:center;color:var(--muted)}
.heat small{opacity:.75}
.badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:11px;font-weight:600;
color:#fff;background:var(--muted)}.badge.pass{background:var(--pass)}
.badge.fail{background:var(--fail)}.badge.error{background:var(--error)}
.badge.flaky{background:var(--flaky)}
.controls{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin-bottom:8px}
.controls input,.controls select{font:inherit;padding:5px 8px;border:1px solid var(--line);
border-radius:6px;background:var(--bg);color:var(--fg)}.controls input{flex:1 1 220px}
#trials thead th{cursor:pointer;user-select:none}#trials th[data-dir=asc]::after{content:" ▲"}
#trials th[data-dir=desc]::after{content:" ▼"}
#trials tr.trial{cursor:pointer}#trials tr.trial:hover{background:var(--panel)}
#trials tbody:not(.open) tr.detail{display:none}#trials tr.detail>td{background:var(--panel)}
.toggle{border:0;background:none;color:var(--muted);cursor:pointer;font-size:12px;padding:0 4px}
tbody.open .toggle{transform:rotate(90deg)}
table.checks{margin:4px 0;background:var(--bg)}table.checks tr.bad td{background:
color-mix(in srgb,var(--fail) 8%,transparent)}pre.msg{max-height:14em;overflow:auto}
pre.out,pre.err{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:8px;
max-height:24em;overflow:auto}ul.rules{margin:4px 0;padding-left:18px}
.meta{margin:4px 0 2px}footer{margin:32px 0 8px;font-size:12px}
"""

JS = """
(function(){
var table=document.getElementById('trials');if(!table)return;
var q=document.getElementById('q'),fs=document.getElementById('fstatus'),
fm=document.getElementById('fmodel'),shown=document.getElementById('shown');
function filter(){var text=q.value.toLowerCase(),s=fs.value,m=fm.value,n=0;
Array.prototype.forEach.call(table.tBodies,function(tb){var ok=(!s||tb.dataset.status===s)&&
(!m||tb.dataset.model===m)&&(!text||tb.dataset.search.indexOf(text)>=0);tb.hidden=!ok;
if(ok)n++;});shown.textContent=n;}
[q,fs,fm].forEach(function(el){el.addEventListener('input',filter);});
function sort(th){var key=th.dataset.key,num=th.dataset.type==='num',
dir=th.dataset.dir==='asc'?'desc':'asc';
table.tHead.querySelectorAll('th').forEach(function(o){delete o.dataset.dir;
o.removeAttribute('aria-sort');});th.dataset.dir=dir;
th.setAttribute('aria-sort',dir==='asc'?'ascending':'descending');
var bodies=Array.prototype.slice.call(table.tBodies);bodies.sort(function(a,b){
var x=a.dataset[key],y=b.dataset[key],c;if(num){x=x===''?-Infinity:parseFloat(x);
y=y===''?-Infinity:parseFloat(y);c=x-y;}else{c=x.localeCompare(y,undefined,{numeric:true});}
return dir==='asc'?c:-c;});bodies.forEach(function(b){table.appendChild(b);});}
table.tHead.addEventListener('click',function(ev){var th=ev.target.closest('th[data-key]');
if(th)sort(th);});
table.tHead.addEventListener('keydown',function(ev){var th=ev.target.closest('th[data-key]');
if(th&&(ev.key==='Enter'||ev.key===' ')){ev.preventDefault();sort(th);}});
table.addEventListener('click',function(ev){var row=ev.target.closest('tr.trial');
if(!row||ev.target.closest('a'))return;var tb=row.parentNode;tb.classList.toggle('open');
row.querySelector('.toggle').setAttribute('aria-expanded',tb.classList.contains('open'));});
})();
"""
