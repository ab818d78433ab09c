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
.heat small{opacity:.75}.heat th.model{white-space:normal;overflow-wrap:anywhere;
max-width:11em;min-width:6em;vertical-align:bottom;font-size:12px}
.badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:11px;font-weight:600;
color:#fff;background:var(--muted)}.badge.pass{background:var(--pass)}
.badge.fail{background:var(--fail)}.badge.error{background:var(--error)}
.badge.flaky{background:var(--flaky)}
.controls{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin-bottom:8px}
.controls input,.controls select{font:inherit;padding:5px 8px;border:1px solid var(--line);
border-radius:6px;background:var(--bg);color:var(--fg)}.controls input{flex:1 1 220px}
#trials{table-layout:fixed}#trials td{overflow-wrap:anywhere}
#trials>thead th{white-space:normal;width:6.5%}#trials>thead th.c-id{width:24%}
#trials>thead th.c-task{width:13%}#trials>thead th.c-model{width:13%}
#trials>thead th.c-help,#trials>thead th.c-params{width:8%}#trials>thead th.c-status{width:7%}
#trials tr.why td{padding:0 8px 6px 30px;border-bottom:1px solid var(--line);font-size:12px;
color:var(--muted);overflow-wrap:anywhere}#trials tr.why.fail td::before{content:"✗ ";
color:var(--fail)}#trials tr.why.error td::before{content:"⚠ ";color:var(--error)}
#trials tr.trial:has(+tr.why) td{border-bottom:0}
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
.meta{margin:4px 0 2px}.viewonly{display:none}p.why{margin:6px 0}footer{margin:32px 0 8px;font-size:12px}
.heat td.cell{cursor:pointer}.heat td.cell.picked{outline:3px solid var(--accent);outline-offset:-3px}
.heat small.k{opacity:.7;font-size:10px}.chip{display:inline-flex;gap:6px;align-items:center;
background:var(--panel);border:1px solid var(--accent);border-radius:12px;padding:2px 4px 2px 10px}
.chip[hidden]{display:none}.chip button{border:0;background:none;color:var(--fg);cursor:pointer;font:inherit}
ul.triage li{margin:3px 0;overflow-wrap:anywhere}
ul.errors .kind{display:inline-block;padding:0 6px;margin-right:4px;border-radius:3px;font-size:.85em;background:var(--error);color:#fff}
.grid-table td.n{white-space:nowrap}svg.effect{width:160px;vertical-align:middle}
svg.effect .ci{stroke:var(--muted);stroke-width:3}svg.effect circle{fill:var(--muted)}
svg.effect.up .ci,svg.effect.up circle{stroke:var(--pass);fill:var(--pass)}
svg.effect.down .ci,svg.effect.down circle{stroke:var(--fail);fill:var(--fail)}
"""

JS = """
(function(){
var table=document.getElementById('trials');if(!table)return;
var q=document.getElementById('q'),fs=document.getElementById('fstatus'),
fm=document.getElementById('fmodel'),shown=document.getElementById('shown'),
chip=document.getElementById('fcell'),cell='';
function search(tb){var d=tb.dataset,why=tb.querySelector('tr.why');
if(d.search===undefined)d.search=[d.id,d.task,d.model,d.status,
d.cell.split('␟').slice(2).join(' '),why?why.textContent:''].join(' ').toLowerCase();
return d.search;}
function filter(){var text=q.value.toLowerCase(),s=fs.value,m=fm.value,n=0;
Array.prototype.forEach.call(table.tBodies,function(tb){var ok=(!s||tb.dataset.status===s)&&
(!m||tb.dataset.model===m)&&(!cell||tb.dataset.cell===cell)&&
(!text||search(tb).indexOf(text)>=0);tb.hidden=!ok;if(ok)n++;});shown.textContent=n;}
[q,fs,fm].forEach(function(el){el.addEventListener('input',filter);
el.addEventListener('change',filter);});
function setCell(key,label){cell=key;chip.hidden=!key;
chip.querySelector('b').textContent=label||'';
document.querySelectorAll('.heat td.cell').forEach(function(td){
td.classList.toggle('picked',!!key&&td.dataset.cell===key);});filter();}
chip.querySelector('button').addEventListener('click',function(){setCell('');});
document.querySelectorAll('.heat td.cell').forEach(function(td){
td.tabIndex=0;function pick(){if(cell===td.dataset.cell){setCell('');return;}
setCell(td.dataset.cell,td.dataset.label);table.scrollIntoView({block:'start'});}
td.addEventListener('click',pick);td.addEventListener('keydown',function(ev){
if(ev.key==='Enter'||ev.key===' '){ev.preventDefault();pick();}});});
document.querySelectorAll('[data-show-trial]').forEach(function(a){
a.addEventListener('click',function(ev){ev.preventDefault();var id=a.dataset.showTrial;
setCell('');fs.value='';fm.value='';q.value='';
var tb=Array.prototype.find.call(table.tBodies,function(b){return b.dataset.id===id;});
filter();if(tb){open(tb,true);tb.scrollIntoView({block:'start'});}});});
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
function open(tb,on){tb.classList.toggle('open',on);
tb.querySelector('.toggle').setAttribute('aria-expanded',on);if(on)trajectory(tb);}
table.addEventListener('click',function(ev){var row=ev.target.closest('tr.trial');
if(!row||ev.target.closest('a'))return;var tb=row.parentNode,on=!tb.classList.contains('open');
open(tb,on);var h='#trial='+encodeURIComponent(tb.dataset.id);
try{if(on)history.replaceState(null,'',h);else if(location.hash===h)
history.replaceState(null,'',location.pathname+location.search);}catch(e){}});
/* A deep link: report.html#trial=ID opens that trial (the address bar keeps the open one). */
function fromHash(){var m=/^#trial=(.+)$/.exec(location.hash);if(!m)return;
var id=decodeURIComponent(m[1]),tb=Array.prototype.find.call(table.tBodies,function(b){
return b.dataset.id===id;});if(!tb)return;setCell('');fs.value='';fm.value='';q.value='';
filter();open(tb,true);tb.scrollIntoView({block:'start'});}
window.addEventListener('hashchange',fromHash);
var docs=null,details=null,chunk=50,unpacked={};
function island(id){var el=document.getElementById(id);return el?JSON.parse(el.textContent):[];}
function doc(i){if(docs===null)docs=island('trajectories');
return docs[i]?inflate(docs[i]):Promise.resolve(null);}
function detail(i){if(details===null){details=island('details');
var el=document.getElementById('details');if(el)chunk=+el.dataset.chunk;}
var c=Math.floor(i/chunk);if(!details[c])return Promise.resolve(null);
if(!unpacked[c])unpacked[c]=inflate(details[c]);
return unpacked[c].then(function(list){return list[i%chunk];});}
function inflate(b64){var bin=atob(b64),u=new Uint8Array(bin.length);
for(var i=0;i<bin.length;i++)u[i]=bin.charCodeAt(i);
var st=new Blob([u]).stream().pipeThrough(new DecompressionStream('gzip'));
return new Response(st).text().then(JSON.parse);}
function trajectory(tb){if(tb.dataset.done)return;tb.dataset.done='1';
var lazy=!tb.querySelector('tr.detail'),td=null,i=+tb.dataset.i;
if(lazy){var tr=document.createElement('tr');tr.className='detail';td=document.createElement('td');
td.colSpan=tb.rows[0].cells.length;td.textContent='opening…';tr.appendChild(td);tb.appendChild(tr);}
var box=tb.querySelector('.traj');if(!box&&!lazy)return;
function say(msg){(lazy?td:box).textContent=msg;}
if(typeof DecompressionStream==='undefined'){
say('This browser cannot unpack the details (it needs DecompressionStream).');return;}
(lazy?detail(i):Promise.resolve(null)).then(function(html){
if(lazy){if(!html){say('No details recorded.');return null;}td.innerHTML=html;
box=td.querySelector('.traj');}return box?doc(i):null;}).then(function(d){
if(!box)return;if(d&&d.items)Traj.draw(box,d,tb.dataset.id);
else box.textContent='No trace recorded.';},function(err){say('Could not unpack the details: '+err);});}
fromHash();
})();
"""
