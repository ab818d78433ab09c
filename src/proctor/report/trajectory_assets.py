"""How report.html draws a trajectory (trajectory.py's documents): each model turn with its
messages, its answer and its tool calls, each call with the command it caused; the system
prompt, help text, long tagged blocks and housekeeping folded; long outputs shown by their
head and tail. Every string goes in through `textContent`, never as markup."""

CSS = """
.traj .step{border-left:3px solid var(--line);padding:4px 0 4px 10px;margin:6px 0}
.traj .turn{border-color:var(--accent)}.traj .turn.side{border-color:var(--line);opacity:.8}
.traj .head{font-weight:600;margin-bottom:3px}.traj .head .badge{margin:0 6px}
.traj .head .muted{font-weight:400}
.traj pre{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:6px;
margin:3px 0;max-height:28em;overflow:auto}.traj pre.stderr{border-color:var(--error)}
.traj .msg{margin:4px 0 4px 4px}.traj .role{font-size:11px;text-transform:uppercase;
color:var(--muted);margin-right:6px}
.traj .call{margin:6px 0 4px 4px}.traj .line{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;
color:var(--accent);font-weight:600;overflow-wrap:anywhere}
.traj .cmd{border-left:3px solid var(--line);margin:3px 0 3px 10px;padding:2px 0 2px 8px}
.traj .cmd.ok{border-color:var(--pass)}.traj .cmd.bad{border-color:var(--fail)}
.traj .cmd .head code{font-weight:600}.traj .procs{font-size:12px;color:var(--muted)}
.traj .result{margin:3px 0 3px 10px}
.traj details.fold>summary,.traj details.aside>summary{cursor:pointer;color:var(--muted);
font-size:12px}.traj details.aside ul{margin:2px 0;padding-left:20px;font-size:12px}
.traj details.aside li code{color:var(--muted)}
.traj button.more{border:1px dashed var(--line);background:var(--panel);color:var(--muted);
cursor:pointer;font:11px ui-monospace,Menlo,monospace;margin:2px 0;padding:1px 8px;
border-radius:4px;display:block}
.traj p.cut{font-style:italic;color:var(--error)}.traj .why{font-weight:600}
ul.audit{padding-left:18px;margin:4px 0}ul.audit .kind{display:inline-block;min-width:7em;
color:var(--muted)}
"""

JS = r"""
var Traj=(function(){
function el(tag,cls,text){var n=document.createElement(tag);if(cls)n.className=cls;
if(text!==undefined&&text!==null)n.textContent=String(text);return n;}
function secs(x){return x==null?'':(x<1?x.toFixed(2):x.toFixed(1))+'s';}
function count(n){return n==null?'?':n<1000?String(n):(n/1000).toFixed(1)+'k';}
var HEAD=6,TAIL=6,LONG=1600;
/* A long text: its first and last lines (or characters), the rest behind a button. */
function pre(parent,text,cls,head,tail){if(!text)return;var p=el('pre',cls||'');
head=head||HEAD;tail=tail||TAIL;
var lines=text.split('\n');if(lines.length>head+tail+2){
p.appendChild(document.createTextNode(lines.slice(0,head).join('\n')+'\n'));
var b=el('button','more','⋯ '+(lines.length-head-tail)+' more lines');b.type='button';
b.addEventListener('click',function(ev){ev.stopPropagation();p.textContent=text;});
p.appendChild(b);p.appendChild(document.createTextNode(lines.slice(-tail).join('\n')));}
else if(text.length>LONG){p.appendChild(document.createTextNode(text.slice(0,LONG*2/3)));
var m=el('button','more','⋯ '+(text.length-LONG).toLocaleString('en')+' more characters');
m.type='button';m.addEventListener('click',function(ev){ev.stopPropagation();
p.textContent=text;});p.appendChild(m);
p.appendChild(document.createTextNode(text.slice(text.length-LONG/3)));}
else p.textContent=text;parent.appendChild(p);return p;}
function fold(parent,label,text,n){var d=el('details','fold');
d.appendChild(el('summary','',label+' · '+(n==null?text.length:n).toLocaleString('en')+
' characters'));
d.addEventListener('toggle',function(){if(d.open&&d.children.length<2)pre(d,text);});
parent.appendChild(d);}
function asideList(parent,lines,more,label,noun){if(!lines||!lines.length)return;
var why={};lines.forEach(function(l){if(l[1])why[l[1]]=1;});var n=lines.length+(more||0);
noun=noun||'command';var reasons=Object.keys(why);
var d=el('details','aside');d.appendChild(el('summary','','· '+(label?label+': ':'')+n+' '+
noun+(n>1?'s':'')+(noun==='command'?' set aside'+(reasons.length?' ('+reasons.join(', ')+')'
:''):'')));
var ul=el('ul');lines.forEach(function(l){var li=el('li');li.appendChild(el('code','',l[0]));
ul.appendChild(li);});if(more)ul.appendChild(el('li','muted','… and '+more+' more'));
d.appendChild(ul);parent.appendChild(d);}
function message(parent,m){var b=el('div','msg '+m.role);b.appendChild(el('span','role',m.role));
/* a message in short (3 + 2 lines, as proctor show): the task leads, an agent's own
   instructions around it follow */
(m.parts||[]).forEach(function(p){if(typeof p==='string')pre(b,p,'',3,2);
else fold(b,p[0],p[1],p[2]);});
parent.appendChild(b);}
function command(c){if(c.aside!==undefined){var q=el('div','cmd muted');
q.appendChild(el('code','','$ '+c.cmd));q.appendChild(el('span','',' · set aside ('+c.aside+
(c.exit!=null?', exit '+c.exit:'')+')'));return q;}
var known=c.exit!=null||c.timed_out,ok=c.exit===0&&!c.timed_out;
var d=el('div','cmd '+(known?(ok?'ok':'bad'):''));var h=el('div','head');
h.appendChild(el('code','','$ '+c.cmd));
h.appendChild(el('span','badge '+(known?(ok?'pass':'fail'):''),
c.timed_out?'timed out':(known?'exit '+c.exit:'ran')));
h.appendChild(el('span','muted',secs(c.dur)));d.appendChild(h);
if(c.procs&&c.procs.length)d.appendChild(el('div','procs','started: '+c.procs.join(' · ')));
pre(d,c.stdout,'stdout');pre(d,c.stderr,'stderr');
if(c.capped)d.appendChild(el('p','muted','output was capped while recording'));return d;}
function turn(s){var d=el('div','step turn'+(s.side?' side':''));
var t='◆ '+(s.n==null?'':'turn '+s.n+' · ')+s.model;
var h=el('div','head',t);h.appendChild(el('span','muted',' · '+count(s.in)+' in / '+
count(s.out)+' out'+(s.lat!=null?' · '+secs(s.lat):'')+(s.attempt?' · attempt '+s.attempt:'')+
(s.side?' · '+s.side:'')));d.appendChild(h);
if(s.sys)fold(d,s.sys[0],s.sys[1],s.sys[2]);
(s.msgs||[]).forEach(function(m){message(d,m);});
if(s.text){var r=el('div','msg assistant');r.appendChild(el('span','role','answer'));
pre(r,s.text);d.appendChild(r);}
(s.calls||[]).forEach(function(c){var k=el('div','call');k.appendChild(el('div','line','→ '+c.line));
(c.cmds||[]).forEach(function(x){k.appendChild(command(x));});
if(c.result!==undefined){var r=el('div','result');r.appendChild(el('span','role','returned'));
if(c.result)pre(r,c.result);else r.appendChild(el('span','muted','(nothing)'));k.appendChild(r);}
else if(!(c.cmds||[]).length)k.appendChild(el('div','result muted','no result recorded'));
d.appendChild(k);});
asideList(d,s.aside,s.aside_more);
if(s.error)pre(d,s.error,'stderr');return d;}
function item(s){var d;
if(s.k==='turn')return turn(s);
if(s.k==='cmd'){d=el('div','step');d.appendChild(command(s));return d;}
if(s.k==='agent'){d=el('div','step output');var ok=s.exit===0&&!s.timed_out;
var h=el('div','head','◇ the agent program ');h.appendChild(el('span','badge '+(ok?'pass':'fail'),
s.timed_out?'timed out':'exit '+s.exit));h.appendChild(el('span','muted',secs(s.dur)));
d.appendChild(h);if(s.stderr)fold(d,'its stderr',s.stderr,s.stderr_n);return d;}
if(s.k==='aside'){d=el('div','step');var files=s.label==="the agent's own files";
asideList(d,s.lines,s.lines_more,s.label==='set aside'?'':s.label,files?'file':'command');
return d;}
if(s.k==='output'){d=el('div','step output');
if(s.label==='all the agent printed')fold(d,s.label,s.text,s.n);
else{d.appendChild(el('div','head','◇ '+s.label));pre(d,s.text);}return d;}
d=el('div','step event muted');d.appendChild(el('span','','· '+s.type+' '));
d.appendChild(el('code','',s.text));if(s.exit!=null)d.appendChild(el('span','',' [exit '+s.exit+']'));
return d;}
function draw(box,doc,id){box.textContent='';var items=doc.items||[];
if(!items.length)box.appendChild(el('p','muted','No steps recorded.'));
items.forEach(function(s,i){if(doc.items_cut&&i===doc.items_cut[0])box.appendChild(el('p',
'cut','… '+doc.items_cut[1]+' steps left out to keep this page small (all of them: trials/'+
id+'/trace.jsonl)'));box.appendChild(item(s));});
if(doc.limit<8000)box.appendChild(el('p','muted',(doc.limit?'Texts here are cut to '+
doc.limit+' characters (each cut says so)':'Texts are left out')+' to keep this page small; '+
'trials/'+id+'/trace.jsonl has all.'));
if((doc.audit||[]).length){box.appendChild(el('h4','','Audit'));var ul=el('ul','audit');
doc.audit.forEach(function(a){var li=el('li');li.appendChild(el('span','kind',a[0]+' '));
li.appendChild(el('code','',a[1]));ul.appendChild(li);});
Object.keys(doc.audit_more||{}).forEach(function(k){ul.appendChild(el('li','muted',
'… '+doc.audit_more[k]+' more '+k+' events (all in trials/'+id+'/audit.jsonl)'));});
box.appendChild(ul);}}
return {draw:draw};})();
"""
