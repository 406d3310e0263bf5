package faults

import "github.com/nodeprint/nodeprint/pkg/lang"

// summaryZh is each fault's Summary in Chinese, for the Chinese runbooks.
// Kept beside the catalog rather than in each registration so that the
// English definitions stay readable; a test checks that every fault has one.
var summaryZh = map[string]string{
	"apiserver-degraded":   "Karpenter 访问 API Server 的流量经过 harness 的代理，代理增加延迟、拒绝一部分新连接并切断已建立的连接。",
	"capacity-shortage":    "云厂商通过容量装饰器的 ConfigMap 拒绝部分规格（容量不足）。NodePool 允许其他容量类型或可用区时，Karpenter 回退，实例选择与成本随之偏移；不允许时 Pod 一直 Pending。",
	"node-finalizer":       "其他控制器的 finalizer 扣住本次运行的 Node：故障自带的 KWOK 节点 stage 在每个 Node 出现时为其加上 nodeprint.dev/fault-node-finalizer，因此 Karpenter 删除、排空并终止的 Node 一直保留，其 NodeClaim 也一直等待（需要带 scaleIn 的场景）。",
	"node-not-ready":       "运行中的节点在 Ready 一段时间后变为 NotReady（故障自带的 KWOK 节点 stage，类似 KWOK 的节点混沌 stage）。",
	"do-not-disrupt":       "工作负载的新版本为其 Pod 加上 karpenter.sh/do-not-disrupt 注解：Karpenter 不得主动中断这些 Pod 所在的节点，缩容中对这些节点的漂移、整合或过期因此一直等待（需要带 scaleIn 的场景）。",
	"pdb-blocks-eviction":  "工作负载的新版本带来一个不允许任何驱逐的 PodDisruptionBudget（maxUnavailable 为 0，取代场景中的预算）：Karpenter 不得主动中断其 Pod 所在的节点，缩容中对这些节点的漂移、整合或过期因此一直等待（需要带 scaleIn 的场景）。",
	"registration-blocked": "一条 ValidatingAdmissionPolicy 拒绝本次运行的 Node 对象，已 Launched 的 NodeClaim 因此永远无法注册。",
	"termination-refused":  "云厂商拒绝终止本次运行的实例（如 EC2 对开启了终止保护的实例，或对缺少 ec2:TerminateInstances 权限的角色）：一条 ValidatingAdmissionPolicy 拒绝对本次运行 NodeClaim 的第二次删除，即 KWOK provider 终止实例的操作，因此 Karpenter 删除并排空的节点一直保留，被 Karpenter 自己的 finalizer 扣住（需要带 scaleIn 的场景）。",
	"slow-boot":            "实例启动缓慢：本次运行的 KWOKNodeClass 被设置了很大的 nodeRegistrationDelay。",
	"nodepool-mismatch":    "NodePool 新增的一条约束排除了所有能容纳 Pod 的实例，尽管实例目录中存在这样的实例。",
	"nodepool-limits":      "NodePool 的 limits 低于工作负载的需求：Karpenter 达到上限后停止扩容，其余 Pod 一直 Pending。",
	"missing-nodeclass":    "NodePool 引用了一个不存在的 NodeClass（KWOK provider 将其报告为容量不足）。",
	"consolidation-churn":  "中断策略使节点循环替换：节点启动后很快过期（模板中的 expireAfter），Karpenter 驱逐并替换它们，替换后的节点又再次过期。",
	"memory-leak":          "工作负载的内存从每次容器启动起、在其用量基础上以固定速率增长（KWOK usage CEL）；达到容器的内存 limit 时，故障自带的 KWOK stage 将容器标记为 OOMKilled 并重启，内存泄漏从重启时重新开始。若场景中配置了基于内存的 HPA，副本数与节点数随之增长。",
	"cpu-spike":            "工作负载的 CPU 用量在一段时间内跃升为 requests 的数倍（KWOK usage CEL）；若场景中配置了基于 CPU 的 HPA，副本数与节点数随之增长。",
	"oversized-requests":   "工作负载的新版本请求的 CPU（或内存）超过实例目录中最大的实例规格。",
	"crash-loop":           "工作负载的容器启动后不久即报错退出，反复如此（故障自带的 KWOK Pod stage：lastState 为 terminated Error，restartCount 递增，CrashLoopBackOff）。",
	"image-pull-failure":   "工作负载的新版本引用了无法拉取的镜像：使用该镜像的容器一直处于 ErrImagePull/ImagePullBackOff（故障自带的 KWOK Pod stage，按镜像选择 Pod）。",
}

// SummaryIn returns the fault's summary in a language (lang.En or lang.Zh).
func (d *Definition) SummaryIn(l string) string {
	if s, ok := summaryZh[d.Name]; ok && l == lang.Zh {
		return s
	}
	return d.Summary
}
