"""The run page's script (inline, no library, no network): the items table (search, filters, sort,
failing items first), the details pane of an item, the hard-failures list and the additions to "look
at first" that need every item. It reads the JSON the page embeds (``page.write_page``)."""

from __future__ import annotations

PAGE_SCRIPT = r"""
(function(){
"use strict";
function data(id){var el=document.getElementById(id);return el?JSON.parse(el.textContent):null;}
var R=data("fmq-report")||{}, ITEMS=data("fmq-items")||[], CONTROL={}, CASES={};
(data("fmq-control")||[]).forEach(function(c){CONTROL[c.id]=c;});
(data("fmq-cases")||[]).forEach(function(c){CASES[c.id]=c;});
var DIMS=R.dimensions||[], PAIRED=R.paired||null, BY_ID={};
var RANK={error:0,unscored:1,failed:2,passed:3};
var $=function(id){return document.getElementById(id);};
function esc(s){return String(s==null?"":s).replace(/[&<>"']/g,function(c){return {"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c];});}
function num(v,d){return v==null?"–":Number(v).toFixed(d==null?3:d);}
function lang(locale){return (locale||"en").slice(0,2).toLowerCase();}
function pairedKind(it){var p=PAIRED&&PAIRED[it.id];if(!p)return "";return !p[0]&&p[1]?"new":p[0]&&!p[1]?"fixed":!p[0]&&!p[1]?"both":"pass";}
ITEMS.forEach(function(it){it._hay=null;it._paired=pairedKind(it);BY_ID[it.id]=it;});
function hay(it){
  if(it._hay===null){var c=CASES[it.id]||{};
    it._hay=[it.id,it.intent,it.locale,(it.tags||[]).join(" "),it.query,it.answer,(it.reasons||[]).join(" "),
      (it.hard||[]).map(function(h){return h.rule+" "+h.detail;}).join(" "),(c.facts||[]).join(" "),c.reference||""].join("\n").toLowerCase();}
  return it._hay;}
var DEFAULTS={q:"",status:"",label:"",intent:"",locale:"",tag:"",dim:"",below:0.6,paired:"",sort:"",asc:true,limit:300};
var state=Object.assign({},DEFAULTS), selected=null;

function fill(id,values){var el=$(id);if(!el)return;values.forEach(function(v){var o=document.createElement("option");o.value=v;o.textContent=v;el.appendChild(o);});}
function uniq(f){var s={};ITEMS.forEach(function(it){[].concat(f(it)).forEach(function(v){if(v!=null)s[v]=1;});});return Object.keys(s).sort();}
fill("f-intent",uniq(function(it){return it.intent;}));
fill("f-locale",uniq(function(it){return it.locale;}));
fill("f-tag",uniq(function(it){return it.tags||[];}));
fill("f-dim",DIMS);

// The human label of the item's dataset line: acceptable, defective or unlabelled.
function labelOf(it){var a=it.label&&it.label.acceptable;return a===true?"acceptable":a===false?"defective":"unlabelled";}
function belowDim(it,d,t){var v=it.dims[d];return v!=null&&v<t;}
function keep(it){
  var s=state;
  if(s.status==="notpassed"){if(it.status==="passed")return false;}
  else if(s.status==="hard"){if(!(it.hard&&it.hard.length))return false;}
  else if(s.status&&it.status!==s.status)return false;
  if(s.label&&labelOf(it)!==s.label)return false;
  if(s.intent&&it.intent!==s.intent)return false;
  if(s.locale&&it.locale!==s.locale)return false;
  if(s.tag&&(it.tags||[]).indexOf(s.tag)<0)return false;
  if(s.paired&&it._paired!==s.paired)return false;
  if(s.dim==="*"){if(!DIMS.some(function(d){return belowDim(it,d,s.below);}))return false;}
  else if(s.dim&&!belowDim(it,s.dim,s.below))return false;
  if(s.q){var words=s.q.toLowerCase().split(/\s+/).filter(Boolean),h=hay(it);for(var i=0;i<words.length;i++)if(h.indexOf(words[i])<0)return false;}
  return true;}
function defaultOrder(a,b){return (RANK[a.status]-RANK[b.status])||((a.hard.length?0:1)-(b.hard.length?0:1))||
  ((a.score==null?-1:a.score)-(b.score==null?-1:b.score))||(a.id<b.id?-1:a.id>b.id?1:0);}
// The verdict and the scores first (in a paired run the control's and the difference beside the
// composite), the context last: the key columns stay in sight at 1,400 px, details open or not.
var COLUMNS=[{key:"status",title:"status"},{key:"id",title:"test"},{key:"score",title:"composite",num:true}].concat(
  PAIRED?[{key:"control",title:"control",num:true},{key:"diff",title:"Δ",num:true}]:[],
  [{key:"hard",title:"hard",num:true}],
  DIMS.map(function(d){return {key:"dim:"+d,title:d.replace(/_/g," "),num:true};}),
  [{key:"intent",title:"intent"},{key:"locale",title:"locale"},{key:"tags",title:"tags"}]);
function value(it,key){
  if(key==="status")return RANK[it.status];
  if(key==="tags")return (it.tags||[]).join(",");
  if(key==="hard")return it.hard.length;
  if(key==="control"){var c=CONTROL[it.id];return c?c.score:(PAIRED&&PAIRED[it.id]?PAIRED[it.id][3]:null);}
  if(key==="diff"){var p=PAIRED&&PAIRED[it.id];return p?p[4]:null;}
  if(key.slice(0,4)==="dim:")return it.dims[key.slice(4)];
  return it[key];}
function order(a,b){
  if(!state.sort)return defaultOrder(a,b);
  var x=value(a,state.sort),y=value(b,state.sort),r;
  if(x==null&&y==null)r=0;else if(x==null)r=1;else if(y==null)r=-1;else r=x<y?-1:x>y?1:0;
  return (state.asc?r:-r)||defaultOrder(a,b);}
function head(){
  $("head").innerHTML=COLUMNS.map(function(c){var cls=(c.num?"num":"")+(state.sort===c.key?" sorted"+(state.asc?" asc":""):"");
    return '<th data-key="'+esc(c.key)+'" class="'+cls+'" title="sort by '+esc(c.title)+'">'+esc(c.title)+"</th>";}).join("");}
function cell(it,c){
  var k=c.key;
  if(k==="status")return '<td title="'+esc(it.why||"")+'"><span class="badge st-'+it.status+'">'+it.status+"</span>"+(it._paired==="new"?' <span class="badge fail" title="passes in the control">new</span>':"")+"</td>";
  if(k==="id")return '<td class="id" title="'+esc(it.id)+'">'+esc(it.id)+"</td>";
  if(k==="tags")return "<td>"+(it.tags||[]).map(function(t){return '<span class="tag">'+esc(t)+"</span>";}).join("")+"</td>";
  if(k==="hard")return '<td class="num'+(it.hard.length?' hf':'')+'">'+(it.hard.length||"")+"</td>";
  if(k==="diff"){var d=value(it,k);return '<td class="num'+(d!=null&&d<0?" low":"")+'">'+(d==null?"–":(d>0?"+":"")+d.toFixed(3))+"</td>";}
  if(k==="score")return '<td class="num'+(it.score!=null&&it.score<it.threshold?" low":"")+'" title="threshold '+num(it.threshold,2)+'">'+num(it.score)+"</td>";
  if(k.slice(0,4)==="dim:"){var d2=k.slice(4),v=it.dims[d2];
    if(v==null)return '<td class="num na" title="'+esc((it.dim_status||{})[d2]||"not scored")+'">'+((it.dim_status||{})[d2]==="unscored"?"unscored":"n/a")+"</td>";
    return '<td class="num'+(v<state.below?" low":"")+'">'+v.toFixed(2)+"</td>";}
  if(k==="control")return '<td class="num">'+num(value(it,k))+"</td>";
  return "<td>"+esc(it[k])+"</td>";}
function render(){
  var shown=ITEMS.filter(keep).sort(order), n=shown.length;
  $("count").textContent=n+" of "+ITEMS.length+" items";
  $("rows").innerHTML=shown.slice(0,state.limit).map(function(it){
    return '<tr data-id="'+esc(it.id)+'"'+(selected===it.id?' class="sel"':"")+">"+COLUMNS.map(function(c){return cell(it,c);}).join("")+"</tr>";}).join("");
  $("more").innerHTML=n>state.limit?'Showing '+state.limit+' of '+n+'. <a class="act" id="show-more">show '+Math.min(n-state.limit,1000)+' more</a>':"";
  head();}
function syncControls(){
  [["q","q"],["f-status","status"],["f-label","label"],["f-intent","intent"],["f-locale","locale"],["f-tag","tag"],["f-dim","dim"],["f-below","below"],["f-paired","paired"]]
  .forEach(function(p){var el=$(p[0]);if(el)el.value=state[p[1]];});}
function bind(id,key,parse){var el=$(id);if(!el)return;el.addEventListener("input",function(){state[key]=parse?parse(el.value):el.value;state.limit=DEFAULTS.limit;render();});}
bind("q","q");bind("f-status","status");bind("f-label","label");bind("f-intent","intent");bind("f-locale","locale");bind("f-tag","tag");bind("f-dim","dim");
bind("f-below","below",function(v){var x=parseFloat(v);return isNaN(x)?0.6:x;});bind("f-paired","paired");
$("reset").addEventListener("click",function(){state=Object.assign({},DEFAULTS);syncControls();render();});
$("head").addEventListener("click",function(e){var th=e.target.closest("th");if(!th)return;var k=th.getAttribute("data-key");
  if(state.sort===k)state.asc=!state.asc;else{state.sort=k;state.asc=k!=="hard";}render();});
$("rows").addEventListener("click",function(e){var tr=e.target.closest("tr");if(tr)show(tr.getAttribute("data-id"));});
$("more").addEventListener("click",function(e){if(e.target.id==="show-more"){state.limit+=1000;render();}});

function block(label,text,cls,locale){return text==null||text===""?"":'<div class="lbl">'+esc(label)+'</div><div class="said'+(cls?" "+cls:"")+'" lang="'+lang(locale)+'">'+esc(text)+"</div>";}
function list(label,items,locale){return items&&items.length?'<div class="lbl">'+esc(label)+'</div><ul class="reasons" lang="'+lang(locale)+'">'+items.map(function(x){return "<li>"+esc(x)+"</li>";}).join("")+"</ul>":"";}
function source(s){if(s[2]!=="judge")return '<span class="src" title="computed by a check from evidence">check</span>';
  var offline=/offline/.test(R.judge||"");return '<span class="src judge" title="'+(offline?"a heuristic reading of the offline judge":"graded by the judge")+'">'+(offline?"offline signal":"judge")+(s[3]!=null?" · weight "+s[3]:"")+"</span>";}
function dimension(it,d){
  var v=it.dims[d],st=(it.dim_status||{})[d],det=it.detail&&it.detail[d],low=v!=null&&v<state.below;
  var h="<details"+(low||st==="unscored"?" open":"")+"><summary>"+esc(d)+" "+(v!=null?num(v):"<i>"+esc(st||"not scored")+"</i>")+"</summary>";
  if(!det)return h+'<div class="ev">'+(it.detail===null?"sub-scores and evidence: see results.jsonl (this page was written from the run's summaries)":"no detail")+"</div></details>";
  if(det.why)h+='<div class="ev">'+esc(det.why)+"</div>";
  det.subs.forEach(function(s){
    h+='<div><b>'+esc(s[0])+"</b> "+num(s[1],2)+" "+source(s)+"</div>"+(s[4]||[]).map(function(l){return '<div class="ev" lang="'+lang(it.locale)+'">'+esc(l)+"</div>";}).join("");});
  if(det.other)h+=det.other.map(function(l){return '<div class="ev">'+esc(l)+"</div>";}).join("");
  if(det.na)h+='<div class="ev">not applicable: '+esc(det.na.join(", "))+"</div>";
  if(det.abstained)Object.keys(det.abstained).forEach(function(k){h+='<div class="ev">abstained on '+esc(k)+": "+esc(det.abstained[k])+"</div>";});
  return h+"</details>";}
function generation(g){if(!g)return "";return '<details><summary>Generation record</summary><table>'+Object.keys(g).map(function(k){return "<tr><th>"+esc(k.replace(/_/g," "))+"</th><td>"+esc(g[k])+"</td></tr>";}).join("")+"</table></details>";}
function show(id){
  var it=BY_ID[id];if(!it)return;selected=id;
  var c=CASES[id]||{},ctl=CONTROL[id],p=PAIRED&&PAIRED[id],pane=$("pane"),h="";
  h+='<button class="close" id="close" title="close">×</button><h2 lang="'+lang(it.locale)+'">'+esc(it.id)+' <span class="badge st-'+it.status+'">'+it.status+"</span></h2>";
  h+='<div class="muted">'+esc(it.intent)+" · "+esc(it.locale)+" · composite "+num(it.score)+" (threshold "+num(it.threshold,2)+")"+(it.grade?" · grade "+esc(it.grade):"")+"</div>";
  if(it.why)h+='<div class="why '+(it.status==="passed"?"ok":"no")+'" id="why">'+esc(it.why)+'</div><div class="muted small">'+esc(R.rule||"")+"</div>";
  if((it.tags||[]).length)h+="<div>"+it.tags.map(function(t){return '<span class="tag">'+esc(t)+"</span>";}).join("")+"</div>";
  if(p)h+='<div class="muted">paired: '+({new:"new failure (passes in the control)",fixed:"fixed (fails in the control)",both:"failing in both arms",pass:"passing in both arms"}[it._paired]||"")+", control "+num(p[3])+", Δ "+num(p[4])+"</div>";
  if(it.error)h+=block("error",it.error);
  if(it.hard.length)h+='<h3 class="hf">Hard failures ('+it.hard.length+")</h3>"+it.hard.map(function(x){return '<div><b>'+esc(x.rule)+"</b> <span class=\"muted\">"+esc(x.dimension)+(x.sub_score?" · "+esc(x.sub_score):"")+'</span></div><div class="ev" lang="'+lang(it.locale)+'">'+esc(x.detail)+"</div>";}).join("");
  h+=list("Why it failed",it.reasons,it.locale);
  h+="<h3>What was said</h3>";
  if(c.history&&c.history.length)h+='<details><summary>History ('+c.history.length+(c.earlier_turns?" of "+(c.history.length+c.earlier_turns):"")+" turns)</summary>"+c.history.map(function(m){return block(m.role,m.content,"",it.locale);}).join("")+"</details>";
  h+=block("query",it.query,"",it.locale);
  h+=block(it.recorded?"answer (recorded)":"answer (generated)",it.answer==null?"(not kept in the summary: see results.jsonl)":it.answer,"",it.locale);
  if(ctl||p)h+=block("control's answer"+(ctl?" ("+ctl.status+", "+num(ctl.score)+")":""),ctl?(ctl.answer==null?"(no answer)":ctl.answer):"(see control_results.jsonl)","control",it.locale);
  h+="<h3>Expected</h3>"+(c.facts||c.products||c.reference||c.forbidden?"":'<div class="muted small">The dataset line was not available to this page.</div>');
  h+=list("expected facts",c.facts,it.locale)+list("expected products",c.products,it.locale)+list("forbidden content",c.forbidden,it.locale);
  h+=block("reference answer",c.reference,"ref",it.locale);
  if(it.label)h+='<div class="lbl">human label</div><div>'+(it.label.acceptable?"acceptable":"defective")+(it.label.defect?" · "+esc(it.label.defect):"")+(it.recorded?"":' <span class="muted">(written for the recorded answer, not this generated one)</span>')+"</div>";
  h+="<h3>Dimensions</h3>"+DIMS.filter(function(d){return d in it.dims;}).map(function(d){return dimension(it,d);}).join("");
  h+=generation(it.gen);
  pane.innerHTML=h;pane.hidden=false;$("workspace").classList.add("open");pane.scrollTop=0;
  $("close").addEventListener("click",function(){pane.hidden=true;selected=null;$("workspace").classList.remove("open");render();history.replaceState(null,"",location.pathname);});
  history.replaceState(null,"","#item="+encodeURIComponent(id));render();}
function applyFilter(spec){
  state=Object.assign({},DEFAULTS);spec.split("&").forEach(function(kv){var i=kv.indexOf("=");if(i>0)state[kv.slice(0,i)]=kv.slice(i+1);});
  state.below=parseFloat(state.below)||0.6;syncControls();render();$("sec-items").open=true;$("sec-items").scrollIntoView();}
document.addEventListener("click",function(e){var a=e.target.closest("a.act");if(!a)return;
  if(a.hasAttribute("data-filter")){e.preventDefault();applyFilter(a.getAttribute("data-filter"));}
  else if(a.hasAttribute("data-item")){e.preventDefault();$("sec-items").open=true;show(a.getAttribute("data-item"));$("sec-items").scrollIntoView();}});

var hard=ITEMS.filter(function(it){return it.hard.length;}),byRule={};
hard.forEach(function(it){it.hard.forEach(function(x){byRule[x.rule]=(byRule[x.rule]||0)+1;});});
$("hard-count").textContent="("+hard.length+" items)";
if(hard.length>50)$("sec-hard").open=false;  // a long list would push the sections below out of sight
$("hard").innerHTML=hard.length?'<table><tr><th>test</th><th>intent</th><th>locale</th><th>rule</th><th>where</th><th>detail</th></tr>'+
  hard.sort(function(a,b){return a.id<b.id?-1:1;}).map(function(it){return it.hard.map(function(x,i){return "<tr>"+(i?'<td colspan="3"></td>':'<td style="white-space:nowrap"><a class="act" data-item="'+esc(it.id)+'">'+esc(it.id)+"</a></td><td>"+esc(it.intent)+"</td><td>"+esc(it.locale)+"</td>")+
  "<td><b>"+esc(x.rule)+"</b></td><td>"+esc(x.dimension)+(x.sub_score?" · "+esc(x.sub_score):"")+'</td><td lang="'+lang(it.locale)+'">'+esc(x.detail)+"</td></tr>";}).join("");}).join("")+"</table>":'<p class="muted">No item has a hard failure.</p>';
if(hard.length){var rules=Object.keys(byRule).sort(function(a,b){return byRule[b]-byRule[a];});
  var li=$("first-hard");li.hidden=false;li.innerHTML='<a class="act" data-filter="status=hard">'+hard.length+" item(s) with hard failures</a>: "+rules.slice(0,5).map(function(r){return esc(r)+" "+byRule[r];}).join(", ")+(rules.length>5?", …":"");}
var labelled=ITEMS.filter(function(it){return it.label;}).length;
if($("labels-count"))$("labels-count").textContent=labelled+" item(s) carry a label.";
// A link can carry a view: #item=<test id> opens its details, #filter=<key=value&…> filters the table
// (e.g. #filter=label=defective&status=passed). Read on load and again whenever the hash changes on
// the open page (a link followed, the address edited); the page's own replaceState fires no event.
function fromHash(){
  var m=/^#item=(.+)$/.exec(location.hash),f=/^#filter=(.+)$/.exec(location.hash);
  if(f)applyFilter(decodeURIComponent(f[1]));if(m){$("sec-items").open=true;show(decodeURIComponent(m[1]));}}
window.addEventListener("hashchange",fromHash);
render();fromHash();
})();
"""
