(function(){
var roots=document.querySelectorAll('.rlfix:not([data-js])');
function copy(text,done){
if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(text).then(done,function(){});return;}
var t=document.createElement('textarea');t.value=text;t.style.position='fixed';t.style.opacity='0';
document.body.appendChild(t);t.select();try{document.execCommand('copy');done();}catch(e){}
document.body.removeChild(t);}
Array.prototype.forEach.call(roots,function(root){
root.setAttribute('data-js','ready');
root.addEventListener('click',function(ev){
var b=ev.target.closest('button.copy');
if(b){copy(b.getAttribute('data-copy'),function(){b.classList.add('done');b.textContent='copied';
setTimeout(function(){b.classList.remove('done');b.textContent='copy';},1500);});return;}
var li=ev.target.closest('ul.legend li');if(!li)return;var sig=li.getAttribute('data-sig');
var off=root.getAttribute('data-focus')===sig;
if(off){root.removeAttribute('data-focus');}else{root.setAttribute('data-focus',sig);}
Array.prototype.forEach.call(root.querySelectorAll('.mark'),function(m){
m.classList.toggle('on',!off&&m.getAttribute('data-sig')===sig);});});});})();